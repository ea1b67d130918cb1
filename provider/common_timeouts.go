package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// timeoutContext is ctx bounded by the timeout of operation op (create,
// update or delete): get is the timeouts value's method of that name, def
// its default. Deferred, done cancels the context and, when the operation
// failed because the timeout expired, adds which timeout it was and what to
// do. ok is false when the timeout does not parse (the error is in d).
func timeoutContext(ctx context.Context, op string, get func(context.Context, time.Duration) (time.Duration, diag.Diagnostics),
	def time.Duration, d *diag.Diagnostics) (_ context.Context, done func(), ok bool) {
	timeout, diags := get(ctx, def)
	d.Append(diags...)
	if diags.HasError() {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() {
		if d.HasError() && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			d.AddAttributeError(path.Root("timeouts").AtName(op), "Timeout Expired",
				fmt.Sprintf("The %s timeout (%s) expired before the operation finished. Raise timeouts.%s and apply again.", op, timeout, op))
		}
		cancel()
	}, true
}
