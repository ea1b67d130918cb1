// Package ec2quota names the Service Quotas quota that an EC2 instance
// type's On-Demand vCPUs count against. ec2host reads that quota before a
// launch and ec2sim enforces it at launch, both from the table here, so
// the check and the simulated EC2 cannot disagree about a type's bucket.
package ec2quota

import "strings"

// ServiceCode is EC2's service code in Service Quotas.
const ServiceCode = "ec2"

// StandardCode is the code of the "Running On-Demand Standard (A, C, D,
// H, I, M, R, T, Z) instances" quota, the one most benchmark types use.
const StandardCode = "L-1216C47A"

// Quota is an On-Demand vCPU quota of Service Quotas and the instance
// families whose vCPUs count against it.
type Quota struct {
	Name, Code string
	// Families are family names as Family returns them.
	Families []string
}

// Quotas are the On-Demand vCPU quotas this package knows. A family in
// none of them (mac, hpc, the u- high-memory types) is not checked.
var Quotas = []Quota{
	{"Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", StandardCode,
		// im4gn and is4gen are I types with a longer family name.
		[]string{"a", "c", "d", "h", "i", "im", "is", "m", "r", "t", "z"}},
	{"Running On-Demand G and VT instances", "L-DB2E81BA", []string{"g", "gr", "vt"}},
	{"Running On-Demand P instances", "L-417A185B", []string{"p"}},
	{"Running On-Demand X instances", "L-7295265B", []string{"x"}},
	{"Running On-Demand F instances", "L-74FC7D96", []string{"f"}},
	{"Running On-Demand Inf instances", "L-1945791B", []string{"inf"}},
	{"Running On-Demand Trn instances", "L-2C3B7624", []string{"trn"}},
	{"Running On-Demand DL instances", "L-6E869C2A", []string{"dl"}},
}

// Family is an instance type's family: the lowercase letters before its
// generation digit ("m" for m7i.2xlarge, "im" for im4gn.large, "inf" for
// inf2.xlarge), or "" when the name does not start with letters and a
// digit (u-6tb1.metal).
func Family(instanceType string) string {
	i := strings.IndexFunc(instanceType, func(r rune) bool { return r < 'a' || r > 'z' })
	if i <= 0 || instanceType[i] < '0' || instanceType[i] > '9' {
		return ""
	}
	return instanceType[:i]
}

// For returns the quota instanceType's vCPUs count against; ok is false
// for a family this package knows no On-Demand vCPU quota of.
func For(instanceType string) (q Quota, ok bool) {
	fam := Family(instanceType)
	for _, q := range Quotas {
		for _, f := range q.Families {
			if f == fam {
				return q, true
			}
		}
	}
	return Quota{}, false
}

// ByCode returns the quota of a quota code; ok is false for a code not in
// Quotas.
func ByCode(code string) (q Quota, ok bool) {
	for _, q := range Quotas {
		if q.Code == code {
			return q, true
		}
	}
	return Quota{}, false
}
