package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tune"
)

// The tuning block of pgbench_host: OS knobs set by `pgbench-runner tune
// apply`. Destroy reverts them through `pgbench-runner uninstall`, which
// reads the same state file.

// tuningKnobs maps the tuning block's attribute names to the runner's knob
// names and flags.
var tuningKnobs = []struct{ attr, knob, flag string }{
	{"numa_balancing", tune.NUMABalancing, "--numa-balancing"},
	{"cpu_governor", tune.Governor, "--governor"},
	{"transparent_hugepages", tune.THP, "--thp"},
}

var tuningAppliedAttrTypes = map[string]attr.Type{
	"previous": types.StringType,
	"value":    types.StringType,
	"status":   types.StringType,
	"reason":   types.StringType,
}

// applyTuning runs `pgbench-runner tune apply` for the knobs the block sets,
// with the previous values recorded in the install directory's state file,
// and returns tuning_applied.
func applyTuning(ctx context.Context, rc runnerclient.Client, dir string, t *tuningModel) (types.Map, error) {
	null := types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes})
	args := []string{"tune", "apply", "--state", runnerclient.TuneStatePath(dir)}
	vals := t.values()
	for _, k := range tuningKnobs {
		if v, ok := vals[k.attr]; ok {
			args = append(args, k.flag, v)
		}
	}
	if t.Strict.ValueBool() {
		args = append(args, "--strict")
	}
	var res tune.Result
	if err := rc.Run(ctx, &res, args...); err != nil {
		return null, err
	}
	byKnob := map[string]tune.Change{}
	for _, ch := range res.Changes {
		byKnob[ch.Knob] = ch
	}
	out := map[string]attr.Value{}
	for _, k := range tuningKnobs {
		if _, ok := vals[k.attr]; !ok {
			continue
		}
		ch, ok := byKnob[k.knob]
		if !ok {
			return null, fmt.Errorf("tune apply reported nothing for %s", k.knob)
		}
		tflog.Info(ctx, "tuned", map[string]any{"knob": k.attr, "previous": ch.Previous, "value": ch.Value, "status": ch.Status})
		obj, diags := types.ObjectValue(tuningAppliedAttrTypes, map[string]attr.Value{
			"previous": optString(ch.Previous), "value": optString(ch.Value),
			"status": types.StringValue(ch.Status), "reason": optString(ch.Reason),
		})
		if diags.HasError() {
			return null, fmt.Errorf("record tuning of %s: %v", k.knob, diags)
		}
		out[k.attr] = obj
	}
	m, diags := types.MapValue(types.ObjectType{AttrTypes: tuningAppliedAttrTypes}, out)
	if diags.HasError() {
		return null, fmt.Errorf("record tuning: %v", diags)
	}
	return m, nil
}

type tuningModel struct {
	NUMABalancing        types.String `tfsdk:"numa_balancing"`
	CPUGovernor          types.String `tfsdk:"cpu_governor"`
	TransparentHugepages types.String `tfsdk:"transparent_hugepages"`
	Strict               types.Bool   `tfsdk:"strict"`
}

// values returns the set knobs by attribute name.
func (t *tuningModel) values() map[string]string {
	out := map[string]string{}
	for name, v := range map[string]types.String{
		"numa_balancing": t.NUMABalancing, "cpu_governor": t.CPUGovernor, "transparent_hugepages": t.TransparentHugepages,
	} {
		if !v.IsNull() && !v.IsUnknown() {
			out[name] = v.ValueString()
		}
	}
	return out
}
