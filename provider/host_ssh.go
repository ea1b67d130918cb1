package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The ssh mode of pgbench_host: an existing machine, optionally behind a
// jump host, reached with a pinned host key.

// sshBlockSchema is the ssh block of pgbench_host.
func sshBlockSchema() schema.SingleNestedBlock {
	// Attributes of a single nested block cannot be Required without
	// making the block itself mandatory, so presence is checked here.
	required := []validator.Object{objectvalidator.AlsoRequires(
		fwpath.MatchRelative().AtName("host"), fwpath.MatchRelative().AtName("private_key"), fwpath.MatchRelative().AtName("host_key"))}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Reach an existing machine over SSH, with a pinned host key.",
		Attributes:          sshAttributes("host"),
		Validators:          required,
		Blocks: map[string]schema.Block{
			"bastion": schema.SingleNestedBlock{
				MarkdownDescription: "Optional jump host the connection goes through.",
				Attributes:          sshAttributes("jump host"),
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Validators:          required,
			},
		},
	}
}

// sshAttributes are the attributes of the ssh and bastion blocks; what
// names the machine in descriptions.
func sshAttributes(what string) map[string]schema.Attribute {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	// A key that was not known before (an imported host) can be filled in
	// without replacing the host; changing a known key replaces it.
	replaceIfKnown := []planmodifier.String{stringplanmodifier.RequiresReplaceIf(
		func(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
			resp.RequiresReplace = !req.StateValue.IsNull()
		}, "Replaces the host when a previously known key changes.", "Replaces the host when a previously known key changes.")}
	return map[string]schema.Attribute{
		"host": schema.StringAttribute{
			Optional: true, PlanModifiers: replace,
			MarkdownDescription: "Address or name of the " + what + ". Required.",
		},
		"port": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(22),
			PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
			MarkdownDescription: "SSH port of the " + what + ". Default `22`.",
		},
		"user": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("root"), PlanModifiers: replace,
			MarkdownDescription: "SSH user on the " + what + ". Default `root`; tuning and packages need root or passwordless sudo-less root access.",
		},
		"private_key": schema.StringAttribute{
			Optional: true, Sensitive: true, PlanModifiers: replaceIfKnown,
			MarkdownDescription: "Private key (PEM or OpenSSH format) to log in to the " + what + " with, e.g. `file(\"~/.ssh/id_ed25519\")`. Required.",
		},
		"host_key": schema.StringAttribute{
			Optional: true, PlanModifiers: replaceIfKnown,
			MarkdownDescription: "The " + what + "'s SSH host key, pinned: an `authorized_keys`-format line " +
				"(`ssh-ed25519 AAAA...`) or a `SHA256:` fingerprint. Connections to any other key are refused. Required.",
		},
	}
}

// parseSSHImportID reads the `[user@]host[:port]` of an import ID; the
// keys are unknown until configuration supplies them.
func parseSSHImportID(id string) (*sshModel, error) {
	user, hostPort, ok := strings.Cut(id, "@")
	if !ok {
		user, hostPort = "root", id
	}
	host, portStr, ok := strings.Cut(hostPort, ":")
	port := int64(22)
	if ok {
		p, err := strconv.ParseInt(portStr, 10, 64)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("port %q is not a port number", portStr)
		}
		port = p
	}
	if host == "" || user == "" {
		return nil, errors.New("no host or no user")
	}
	return &sshModel{Host: types.StringValue(host), Port: types.Int64Value(port), User: types.StringValue(user),
		PrivateKey: types.StringNull(), HostKey: types.StringNull()}, nil
}

type sshModel struct {
	Host       types.String  `tfsdk:"host"`
	Port       types.Int64   `tfsdk:"port"`
	User       types.String  `tfsdk:"user"`
	PrivateKey types.String  `tfsdk:"private_key"`
	HostKey    types.String  `tfsdk:"host_key"`
	Bastion    *bastionModel `tfsdk:"bastion"`
}

type bastionModel struct {
	Host       types.String `tfsdk:"host"`
	Port       types.Int64  `tfsdk:"port"`
	User       types.String `tfsdk:"user"`
	PrivateKey types.String `tfsdk:"private_key"`
	HostKey    types.String `tfsdk:"host_key"`
}
