package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// optString is s as a Terraform string, null when empty.
func optString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// stringList is ss as a known Terraform list of strings.
func stringList(ss []string) types.List {
	vs := make([]attr.Value, len(ss))
	for i, s := range ss {
		vs[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vs)
}

// listStrings is the elements of a list of strings; nil when it is null or
// unknown.
func listStrings(ctx context.Context, l types.List) []string {
	var out []string
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	l.ElementsAs(ctx, &out, false)
	return out
}

// upperFirst is s with its first letter in upper case: a message that
// starts a sentence.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
