package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The timeouts a configuration sets bound the operations' contexts: with
// one of 1ns, the first call to the host fails on the deadline, before the
// runner starts (nothing on this machine is touched), and the error names
// the timeout to raise.
func TestTimeoutsBoundOperations(t *testing.T) {
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	conn := map[string]any{"mode": str("local"), "runner_path": str("/nonexistent/pgbench-runner")}
	pool := func(timeouts map[string]any) map[string]any {
		return map[string]any{"host_connection": conn, "pages": tftypes.NewValue(tftypes.Number, 1), "page_size": str("2MB"),
			"state_file": str("/nonexistent/hugepage-state.json"), "timeouts": timeouts}
	}
	local := t.TempDir()
	ab := func(localDir string, timeouts map[string]any) map[string]any {
		return map[string]any{"host_connection": conn, "id": str("k"), "report_dir": str("/nonexistent/campaign"),
			"local_dir": str(localDir), "timeouts": timeouts}
	}
	tests := []struct {
		name string
		run  func(t *testing.T) diag.Diagnostics
		want path.Path
	}{
		{"pool create", func(t *testing.T) diag.Diagnostics {
			r := NewHugepagePoolResource()
			sch, plan := resourceValue(t, r, pool(map[string]any{"create": str("1ns")}))
			resp := resource.CreateResponse{State: tfsdk.State{Schema: sch, Raw: tftypes.NewValue(plan.Type(), nil)}}
			r.Create(context.Background(), resource.CreateRequest{Plan: tfsdk.Plan{Schema: sch, Raw: plan}}, &resp)
			return resp.Diagnostics
		}, path.Root("timeouts").AtName("create")},
		{"pool delete", func(t *testing.T) diag.Diagnostics {
			r := NewHugepagePoolResource()
			sch, state := resourceValue(t, r, pool(map[string]any{"delete": str("1ns")}))
			resp := resource.DeleteResponse{State: tfsdk.State{Schema: sch, Raw: state}}
			r.Delete(context.Background(), resource.DeleteRequest{State: tfsdk.State{Schema: sch, Raw: state}}, &resp)
			return resp.Diagnostics
		}, path.Root("timeouts").AtName("delete")},
		{"campaign update collecting into a new local_dir", func(t *testing.T) diag.Diagnostics {
			r := &abBenchmarkResource{data: &providerData{}}
			sch, state := resourceValue(t, r, ab(local+"/a", nil))
			_, plan := resourceValue(t, r, ab(local+"/b", map[string]any{"update": str("1ns")}))
			resp := resource.UpdateResponse{State: tfsdk.State{Schema: sch, Raw: state}}
			r.Update(context.Background(), resource.UpdateRequest{Plan: tfsdk.Plan{Schema: sch, Raw: plan},
				State: tfsdk.State{Schema: sch, Raw: state}}, &resp)
			return resp.Diagnostics
		}, path.Root("timeouts").AtName("update")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := tt.run(t)
			var found bool
			for _, d := range diags.Errors() {
				if dp, ok := d.(diag.DiagnosticWithPath); ok && dp.Path().Equal(tt.want) && d.Summary() == "Timeout Expired" {
					found = true
				}
			}
			if !found {
				t.Errorf("diagnostics = %v, want a Timeout Expired error at %s", diags, tt.want)
			}
		})
	}
}
