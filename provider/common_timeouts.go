package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// timeoutExpired adds, to an operation that failed because its timeout
// (op: create, update or delete) expired, which timeout it was and what to
// do. Deferred right after the operation's context.WithTimeout.
func timeoutExpired(ctx context.Context, op string, timeout time.Duration, d *diag.Diagnostics) {
	if d.HasError() && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		d.AddAttributeError(path.Root("timeouts").AtName(op), "Timeout Expired",
			fmt.Sprintf("The %s timeout (%s) expired before the operation finished. Raise timeouts.%s and apply again.", op, timeout, op))
	}
}
