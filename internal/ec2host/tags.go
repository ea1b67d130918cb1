package ec2host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// DefaultName is the Name tag of an instance whose tags give none.
const DefaultName = "pgbench"

// ManagedTag reports whether key is one of the tags the package sets on
// every instance itself (managed-by, owner, expires-at), which user tags
// may not change.
func ManagedTag(key string) bool {
	return key == TagManagedBy || key == TagOwner || key == TagExpiresAt
}

// MergeTags is the user tags of an instance: defaults (the provider's
// default_tags) overridden by tags.
func MergeTags(defaults, tags map[string]string) map[string]string {
	out := maps.Clone(defaults)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, tags)
	return out
}

// withName is user tags as the instance carries them: with the Name tag
// Launch sets when they give none.
func withName(tags map[string]string) map[string]string {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	if _, ok := out["Name"]; !ok {
		out["Name"] = DefaultName
	}
	return out
}

// UserTags is the user tags of an instance's tags: without the managed
// ones, and without the default Name unless keepName (the user tags set
// Name themselves).
func UserTags(tags map[string]string, keepName bool) map[string]string {
	out := map[string]string{}
	for k, v := range tags {
		if ManagedTag(k) || (k == "Name" && v == DefaultName && !keepName) {
			continue
		}
		out[k] = v
	}
	return out
}

// UpdateTags changes the user tags of instance id and of its EBS volumes
// from old to new in place (CreateTags, DeleteTags): the tags new adds or
// changes are set, the ones only old has are deleted (each only where it
// still has old's value), and a Name that goes falls back to DefaultName.
// The managed tags are never touched.
func (c *Client) UpdateTags(ctx context.Context, id string, old, new map[string]string) error {
	in, err := c.Describe(ctx, id)
	if err != nil {
		return fmt.Errorf("update tags of %s: %w", id, err)
	}
	if in == nil {
		return fmt.Errorf("update tags of %s: the instance is terminated or does not exist", id)
	}
	resources := append([]string{id}, in.VolumeIDs...)
	was, want := withName(old), withName(new)
	set, del := map[string]string{}, map[string]string{}
	for k, v := range want {
		if w, ok := was[k]; !ok || w != v {
			set[k] = v
		}
	}
	for k, v := range was {
		if _, ok := want[k]; !ok {
			del[k] = v
		}
	}
	for _, k := range slices.Concat(slices.Collect(maps.Keys(set)), slices.Collect(maps.Keys(del))) {
		if ManagedTag(k) {
			return fmt.Errorf("update tags of %s: tag %q is set by the provider and cannot be changed", id, k)
		}
	}
	if len(set) > 0 {
		if _, err := c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: resources, Tags: sdkTags(set)}); err != nil {
			return fmt.Errorf("tag %s: %w", strings.Join(resources, ", "), err)
		}
	}
	if len(del) > 0 {
		if _, err := c.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: resources, Tags: sdkTags(del)}); err != nil {
			return fmt.Errorf("untag %s: %w", strings.Join(resources, ", "), err)
		}
	}
	return nil
}
