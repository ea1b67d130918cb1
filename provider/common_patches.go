package provider

import (
	"context"
	"fmt"
	posixpath "path"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// uploadPatches uploads patch contents into the patches directory beside
// the runner and returns their paths on the host. Patches arrive as
// contents and the runner wants files: each is named by its content's hash,
// so a re-upload is skipped and a build key stays stable. A failure is a
// diagnostic on the element of attr.
func uploadPatches(ctx context.Context, ex remote.Executor, runnerPath, attr string, patches []string, d *diag.Diagnostics) ([]string, bool) {
	var paths []string
	for i, p := range patches {
		sum := digest.SHA256([]byte(p))
		dst := posixpath.Join(posixpath.Dir(runnerPath), "patches", fmt.Sprintf("%s.patch", sum[:16]))
		if _, err := ex.Upload(ctx, strings.NewReader(p), dst, 0o644); err != nil {
			d.AddAttributeError(path.Root(attr).AtListIndex(i), "Patch Upload Failed",
				fmt.Sprintf("Uploading patch %d to %s:%s failed: %v", i+1, ex, dst, err))
			return nil, false
		}
		paths = append(paths, dst)
	}
	return paths, true
}
