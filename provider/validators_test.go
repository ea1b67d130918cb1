package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// validateResource runs what the framework runs for a configuration at
// plan time, in its order: the resource's config validators, then its
// ValidateConfig. set holds the configured attributes: tftypes values, or
// map[string]any for a block; the others are null.
func validateResource(t *testing.T, r resource.Resource, set map[string]any) diag.Diagnostics {
	t.Helper()
	ctx := context.Background()
	sch, raw := resourceValue(t, r, set)
	req := resource.ValidateConfigRequest{Config: tfsdk.Config{Schema: sch, Raw: raw}}
	var diags diag.Diagnostics
	if rv, ok := r.(resource.ResourceWithConfigValidators); ok {
		for _, v := range rv.ConfigValidators(ctx) {
			var resp resource.ValidateConfigResponse
			v.ValidateResource(ctx, req, &resp)
			diags.Append(resp.Diagnostics...)
		}
	}
	if rv, ok := r.(resource.ResourceWithValidateConfig); ok {
		var resp resource.ValidateConfigResponse
		rv.ValidateConfig(ctx, req, &resp)
		diags.Append(resp.Diagnostics...)
	}
	return diags
}

// resourceValue is r's schema and a value of it with the attributes in set
// (see objectValue).
func resourceValue(t *testing.T, r resource.Resource, set map[string]any) (schema.Schema, tftypes.Value) {
	t.Helper()
	var sr resource.SchemaResponse
	r.Schema(context.Background(), resource.SchemaRequest{}, &sr)
	if sr.Diagnostics.HasError() {
		t.Fatalf("schema: %v", sr.Diagnostics)
	}
	return sr.Schema, objectValue(t, sr.Schema.Type().TerraformType(context.Background()), set)
}

// objectValue is an object of type typ with the attributes in set and
// every other attribute null.
func objectValue(t *testing.T, typ tftypes.Type, set map[string]any) tftypes.Value {
	t.Helper()
	ot, ok := typ.(tftypes.Object)
	if !ok {
		t.Fatalf("%s is not an object type", typ)
	}
	vals := map[string]tftypes.Value{}
	for name, at := range ot.AttributeTypes {
		switch v := set[name].(type) {
		case nil:
			vals[name] = tftypes.NewValue(at, nil)
		case tftypes.Value:
			vals[name] = v
		case map[string]any:
			vals[name] = objectValue(t, at, v)
		default:
			t.Fatalf("attribute %s: unexpected %T", name, v)
		}
	}
	for name := range set {
		if _, ok := ot.AttributeTypes[name]; !ok {
			t.Fatalf("no attribute %s in the schema", name)
		}
	}
	return tftypes.NewValue(ot, vals)
}

// Every error a plan-time check raises about an attribute carries that
// attribute's path, so Terraform points at the line to change.
func TestValidateConfigAttributePaths(t *testing.T) {
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	num := func(n float64) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	unknown := tftypes.NewValue(tftypes.Number, tftypes.UnknownValue)
	tests := []struct {
		name      string
		r         resource.Resource
		set       map[string]any
		wantTitle string
		wantPath  path.Path // path.Empty(): no error expected
	}{
		{"pool: nothing set", NewHugepagePoolResource(), nil, "Invalid Pool Size", path.Root("pages")},
		{"pool: pages and fraction", NewHugepagePoolResource(), map[string]any{"pages": num(10), "memory_fraction": num(0.1)},
			"Invalid Pool Size", path.Root("memory_fraction")},
		{"pool: pages and size_for", NewHugepagePoolResource(), map[string]any{"pages": num(10), "size_for": map[string]any{"bin_dir": str("/b")}},
			"Invalid Pool Size", path.Root("size_for")},
		{"pool: unknown pages waits", NewHugepagePoolResource(), map[string]any{"pages": unknown}, "", path.Empty()},
		{"pool: zero pages", NewHugepagePoolResource(), map[string]any{"pages": num(0)}, "Invalid Page Count", path.Root("pages")},
		{"pool: fraction", NewHugepagePoolResource(), map[string]any{"memory_fraction": num(0.95)}, "Invalid Memory Fraction", path.Root("memory_fraction")},
		{"pool: size_for without bin_dir", NewHugepagePoolResource(), map[string]any{"size_for": map[string]any{}},
			"Missing PostgreSQL Bin Directory", path.Root("size_for").AtName("bin_dir")},
		{"pool: numa node", NewHugepagePoolResource(), map[string]any{"pages": num(1), "numa_node": num(-1)}, "Invalid NUMA Node", path.Root("numa_node")},
		{"pool: valid", NewHugepagePoolResource(), map[string]any{"pages": num(1)}, "", path.Empty()},
		{"build: no source block", NewPostgresBuildResource(), nil, "Missing Source", path.Root("source")},
		{"build: empty source", NewPostgresBuildResource(), map[string]any{"source": map[string]any{}}, "Missing Source", path.Root("source")},
		{"build: two sources", NewPostgresBuildResource(), map[string]any{"source": map[string]any{"tarball": str("/t.tar.bz2"), "system": str("/usr/bin")}},
			"Conflicting Sources", path.Root("source").AtName("system")},
		{"build: git without ref", NewPostgresBuildResource(), map[string]any{"source": map[string]any{"git": str("https://x/pg.git")}},
			"Git Needs A Ref", path.Root("source").AtName("ref")},
		{"build: sha256 without tarball", NewPostgresBuildResource(), map[string]any{"source": map[string]any{"system": str("/usr/bin"), "sha256": str("00")}},
			"Checksum Without Tarball", path.Root("source").AtName("sha256")},
		{"build: relative system", NewPostgresBuildResource(), map[string]any{"source": map[string]any{"system": str("bin")}},
			"Relative Bin Directory", path.Root("source").AtName("system")},
		{"build: cflags with system", NewPostgresBuildResource(), map[string]any{"source": map[string]any{"system": str("/usr/bin")}, "cflags": str("-O0")},
			"Nothing To Build", path.Root("cflags")},
		{"build: zero jobs", NewPostgresBuildResource(), map[string]any{"source": map[string]any{"tarball": str("/t.tar.bz2")}, "jobs": num(0)},
			"Invalid Jobs", path.Root("jobs")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := validateResource(t, tt.r, tt.set)
			if tt.wantPath.Equal(path.Empty()) {
				if diags.HasError() {
					t.Fatalf("diagnostics = %v, want none", diags)
				}
				return
			}
			errs := diags.Errors()
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want one %q", errs, tt.wantTitle)
			}
			d := errs[0]
			if d.Summary() != tt.wantTitle {
				t.Errorf("summary = %q, want %q", d.Summary(), tt.wantTitle)
			}
			dp, ok := d.(diag.DiagnosticWithPath)
			if !ok {
				t.Fatalf("%q has no attribute path, want %s", d.Summary(), tt.wantPath)
			}
			if !dp.Path().Equal(tt.wantPath) {
				t.Errorf("%q is at %s, want %s", d.Summary(), dp.Path(), tt.wantPath)
			}
		})
	}
}
