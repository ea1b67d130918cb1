package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pkgmgr"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
)

// packageNames refuses names a package manager would take as options, by
// the same rule the runner's bootstrap applies.
type packageNames struct{}

func (packageNames) Description(context.Context) string {
	return "package names must be non-empty, contain no whitespace or comma and not start with -"
}
func (v packageNames) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (packageNames) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() {
			continue
		}
		if err := pkgmgr.CheckName(s.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i), "Invalid Package Name", err.Error()+".")
		}
	}
}

// durationValidator checks a Go duration string: at least min and, when
// max is not zero, at most max.
type durationValidator struct{ min, max time.Duration }

func (v durationValidator) Description(context.Context) string {
	if v.max != 0 {
		return fmt.Sprintf("must be a Go duration such as 12h or 90m, from %s to %s", v.min, v.max)
	}
	return fmt.Sprintf("must be a Go duration such as 12h or 90m, at least %s", v.min)
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v durationValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d < v.min || (v.max != 0 && d > v.max) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Duration",
			fmt.Sprintf("%q %s.", req.ConfigValue.ValueString(), v.Description(ctx)))
	}
}

// postgresURL accepts a postgres:// or postgresql:// URL that pgx can use,
// by the results database's own parser; its message never repeats the URL,
// which holds a password.
type postgresURL struct{}

func (postgresURL) Description(context.Context) string {
	return "must be a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE"
}
func (v postgresURL) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (postgresURL) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := resultsdb.ParseURL(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Results Database URL", err.Error()+".")
	}
}

// exactlyOneOf is resourcevalidator.ExactlyOneOf with a diagnostic a user
// can act on: a title of its own, and an attribute path in both cases (the
// framework's has none when nothing is set), so Terraform points at the
// line to change. Nothing is decided while one of the attributes is unknown.
type exactlyOneOf struct {
	title string      // the diagnostic's summary, e.g. "Invalid Pool Size"
	names string      // how the detail names the choices, e.g. "pages, memory_fraction or a size_for block"
	paths []path.Path // the choices; with none set, the error is at the first
}

func (v exactlyOneOf) Description(context.Context) string {
	return "exactly one of " + v.names + " must be set"
}
func (v exactlyOneOf) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v exactlyOneOf) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var set []path.Path
	unknown := false
	for _, p := range v.paths {
		var val attr.Value
		if d := req.Config.GetAttribute(ctx, p, &val); d.HasError() {
			resp.Diagnostics.Append(d...)
			return
		}
		switch {
		case val.IsUnknown():
			unknown = true
		case !val.IsNull():
			set = append(set, p)
		}
	}
	switch {
	case len(set) > 1:
		names := make([]string, len(set))
		for i, p := range set {
			names[i] = p.String()
		}
		resp.Diagnostics.AddAttributeError(set[len(set)-1], v.title,
			fmt.Sprintf("Set exactly one of %s; %d are set (%s). Remove all but one.", v.names, len(set), strings.Join(names, ", ")))
	case len(set) == 0 && !unknown:
		resp.Diagnostics.AddAttributeError(v.paths[0], v.title, fmt.Sprintf("Set exactly one of %s; 0 are set.", v.names))
	}
}

// userTagKeys refuses tag keys the provider sets itself (managed-by,
// owner, expires-at: the owner attribute sets owner) and the prefix EC2
// reserves (aws:).
type userTagKeys struct{}

func (userTagKeys) Description(context.Context) string {
	return "tag keys must not be managed-by, owner or expires-at (set by the provider) nor start with aws:"
}
func (v userTagKeys) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (userTagKeys) ValidateMap(ctx context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for k := range req.ConfigValue.Elements() {
		switch {
		case ec2host.ManagedTag(k):
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Reserved Tag Key", fmt.Sprintf("The provider sets the %q tag of every "+
				"EC2 host itself (managed-by, owner, expires-at are how pgbench_ec2_sweep finds orphans). Remove it; set ec2.owner for the owner tag.", k))
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Reserved Tag Key", fmt.Sprintf("EC2 reserves tag keys starting with aws: (%q). Rename it.", k))
		}
	}
}
