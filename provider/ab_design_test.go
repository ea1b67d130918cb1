package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// tfObject is a value of the object type typ with the given attributes set
// and every other attribute null.
func tfObject(typ tftypes.Type, set map[string]tftypes.Value) tftypes.Value {
	obj := typ.(tftypes.Object)
	vals := make(map[string]tftypes.Value, len(obj.AttributeTypes))
	for name, at := range obj.AttributeTypes {
		if v, ok := set[name]; ok {
			vals[name] = v
		} else {
			vals[name] = tftypes.NewValue(at, nil)
		}
	}
	return tftypes.NewValue(obj, vals)
}

// abDesignDiagnostics runs the resource's ValidateConfig on two variants
// with the given order, iterations and client counts.
func abDesignDiagnostics(t *testing.T, order, iterations string, clients ...int64) string {
	t.Helper()
	ctx := context.Background()
	var sr fwresource.SchemaResponse
	(&abBenchmarkResource{}).Schema(ctx, fwresource.SchemaRequest{}, &sr)
	typ := sr.Schema.Type().TerraformType(ctx).(tftypes.Object)
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	variantList := typ.AttributeTypes["variant"].(tftypes.List)
	variant := func(name string) tftypes.Value {
		return tfObject(variantList.ElementType, map[string]tftypes.Value{"name": str(name), "bin_dir": str("/usr/lib/postgresql/15/bin")})
	}
	workloadType := typ.AttributeTypes["workload"].(tftypes.Object)
	cs := make([]tftypes.Value, len(clients))
	for i, c := range clients {
		cs[i] = tftypes.NewValue(tftypes.Number, new(big.Float).SetInt64(c))
	}
	raw := tfObject(typ, map[string]tftypes.Value{
		"host_connection": tfObject(typ.AttributeTypes["host_connection"], map[string]tftypes.Value{"mode": str("local"), "runner_path": str("/nonexistent/pgbench-runner")}),
		"order":           str(order),
		"variant":         tftypes.NewValue(variantList, []tftypes.Value{variant("a"), variant("b")}),
		"workload": tfObject(workloadType, map[string]tftypes.Value{
			"iterations": str(iterations),
			"clients":    tftypes.NewValue(workloadType.AttributeTypes["clients"], cs),
		}),
	})
	var resp fwresource.ValidateConfigResponse
	(&abBenchmarkResource{}).ValidateConfig(ctx, fwresource.ValidateConfigRequest{Config: tfsdk.Config{Schema: sr.Schema, Raw: raw}}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("ValidateConfig(%s, %s iterations, clients %v): %v", order, iterations, clients, resp.Diagnostics)
	}
	var out []string
	for _, w := range resp.Diagnostics.Warnings() {
		out = append(out, w.Summary()+": "+w.Detail())
	}
	return strings.Join(out, "\n")
}

// TestABBenchmarkUnreachableDesignWarns: a randomized order with 4
// iterations and two client counts can never call a change (the smallest
// exact p, 2/70, is 0.0571 after Holm): the plan warns and names 5
// iterations. Five iterations, or the alternating order, plan silently.
func TestABBenchmarkUnreachableDesignWarns(t *testing.T) {
	got := abDesignDiagnostics(t, "randomized", "4", 1, 2)
	for _, want := range []string{"Design Cannot Reach Significance", "0.0571", "at least 5 iterations"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings = %q, want one containing %q", got, want)
		}
	}
	for _, tc := range []struct {
		order, iterations string
	}{{"randomized", "5"}, {"alternate", "4"}} {
		if got := abDesignDiagnostics(t, tc.order, tc.iterations, 1, 2); strings.Contains(got, "Design Cannot Reach Significance") {
			t.Errorf("%s order, %s iterations: warnings = %q, want no design warning", tc.order, tc.iterations, got)
		}
	}
}
