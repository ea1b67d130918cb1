package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
)

// abProgress forwards the runner's progress events to the Terraform log
// while the campaign runs (visible with TF_LOG=INFO) and to the campaign's
// progress.log, in the words the runner prints them, and keeps the
// warnings for diagnostics.
type abProgress struct {
	ctx      context.Context
	log      *progressLog
	warnings []string
}

func (p *abProgress) event(e campaign.Event) {
	if e.Event != campaign.EventRunStart {
		p.log.line(e.String())
	}
	msg := "campaign: " + e.String()
	fields := map[string]any{"seq": e.Seq, "total": e.Total, "variant": e.Variant, "clients": e.Clients, "iteration": e.Iteration}
	for k, v := range map[string]*float64{"tps": e.TPS, "nopm": e.NOPM, "seconds": e.Seconds, "elapsed_seconds": e.ElapsedSeconds, "eta_seconds": e.ETASeconds} {
		if v != nil {
			fields[k] = *v
		}
	}
	switch e.Event {
	case campaign.EventPhase, campaign.EventWaiting:
		tflog.Info(p.ctx, msg)
	case campaign.EventWarning:
		tflog.Warn(p.ctx, msg)
		p.warnings = append(p.warnings, e.Message)
	case campaign.EventRunSkipped, campaign.EventRunDone:
		tflog.Info(p.ctx, msg, fields)
	case campaign.EventDone:
		tflog.Info(p.ctx, msg)
	default:
		tflog.Debug(p.ctx, msg, fields)
	}
}

// line logs a stderr line that is not an event.
func (p *abProgress) line(l string) { tflog.Debug(p.ctx, "pgbench-runner: "+l) }
