package ec2quota_test

import (
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2quota"
)

func TestFor(t *testing.T) {
	for typ, want := range map[string]string{
		"r8i.metal-96xl": "L-1216C47A", "t3.micro": "L-1216C47A", "m7i-flex.large": "L-1216C47A", "z1d.metal": "L-1216C47A",
		"im4gn.large": "L-1216C47A", "is4gen.xlarge": "L-1216C47A", "i4i.metal": "L-1216C47A", "c7gn.16xlarge": "L-1216C47A",
		"g5.xlarge": "L-DB2E81BA", "gr6.4xlarge": "L-DB2E81BA", "vt1.3xlarge": "L-DB2E81BA", "p5.48xlarge": "L-417A185B",
		"x2idn.metal": "L-7295265B", "f1.2xlarge": "L-74FC7D96", "inf2.xlarge": "L-1945791B", "trn1.32xlarge": "L-2C3B7624",
		"dl1.24xlarge": "L-6E869C2A",
		// No On-Demand vCPU quota of theirs is known here.
		"mac2.metal": "", "hpc7a.96xlarge": "", "u-6tb1.metal": "", "": "", "M7I.large": "",
	} {
		q, ok := ec2quota.For(typ)
		if q.Code != want || ok != (want != "") {
			t.Errorf("For(%q) = %q, %v; want %q", typ, q.Code, ok, want)
		}
	}
}

func TestByCode(t *testing.T) {
	for _, q := range ec2quota.Quotas {
		if got, ok := ec2quota.ByCode(q.Code); !ok || got.Name != q.Name {
			t.Errorf("ByCode(%s) = %+v, %v; want %q", q.Code, got, ok, q.Name)
		}
	}
	if _, ok := ec2quota.ByCode("L-00000000"); ok {
		t.Error("ByCode of an unknown code found a quota")
	}
}
