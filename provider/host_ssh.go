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
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The ssh mode of pgbench_host: an existing machine, optionally behind a
// jump host, reached with a pinned host key.

// sshBlockSchema is the ssh block of pgbench_host. The address and the
// pinned host key name the machine, so changing them replaces the host;
// the user, port, credentials and jump host change in place: Update logs
// in with the new values before it records them.
func sshBlockSchema() schema.SingleNestedBlock {
	// Attributes of a single nested block cannot be Required without
	// making the block itself mandatory, so presence is checked here.
	required := func(what string) []validator.Object {
		return []validator.Object{
			objectvalidator.AlsoRequires(fwpath.MatchRelative().AtName("host"), fwpath.MatchRelative().AtName("host_key")),
			sshAuthOne{what},
		}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Reach an existing machine over SSH, with a pinned host key.",
		Attributes:          sshAttributes("host", true),
		Validators:          required("ssh"),
		Blocks: map[string]schema.Block{
			"bastion": schema.SingleNestedBlock{
				MarkdownDescription: "Optional jump host the connection goes through. Adding, changing or removing it is an in-place update.",
				Attributes:          sshAttributes("jump host", false),
				Validators:          required("bastion"),
			},
		},
	}
}

// sshAttributes are the attributes of the ssh and bastion blocks; what
// names the machine in descriptions. identity says whether the address
// and host key name the host (the ssh block) or only the way to it (the
// bastion block, whose every field changes in place).
func sshAttributes(what string, identity bool) map[string]schema.Attribute {
	var replace []planmodifier.String
	var replaceIfKnown []planmodifier.String
	if identity {
		replace = []planmodifier.String{stringplanmodifier.RequiresReplace()}
		// A host key that was not known before (an imported host) can be
		// filled in without replacing the host; another known key is
		// another machine.
		replaceIfKnown = []planmodifier.String{stringplanmodifier.RequiresReplaceIf(
			func(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
				resp.RequiresReplace = !req.StateValue.IsNull()
			}, "Replaces the host when a previously known host key changes.", "Replaces the host when a previously known host key changes.")}
	}
	return map[string]schema.Attribute{
		"host": schema.StringAttribute{
			Optional: true, PlanModifiers: replace,
			MarkdownDescription: "Address or name of the " + what + ". Required.",
		},
		"port": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(22),
			MarkdownDescription: "SSH port of the " + what + ". Default `22`. Changes in place.",
		},
		"user": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("root"),
			MarkdownDescription: "SSH user on the " + what + ". Default `root`; a user other than root needs passwordless sudo " +
				"for tuning and packages. Changes in place.",
		},
		"private_key": schema.StringAttribute{
			Optional: true, Sensitive: true,
			MarkdownDescription: "Private key (PEM or OpenSSH format) to log in to the " + what + " with, e.g. `file(\"~/.ssh/id_ed25519\")`. " +
				"Exactly one of `private_key` and `agent = true` is required. A new key changes in place: the update logs in with it " +
				"first and fails with the server's answer if it is refused, keeping the old key in state.",
		},
		"agent": schema.BoolAttribute{
			Optional: true,
			MarkdownDescription: "Log in to the " + what + " with the keys of the running ssh-agent (`SSH_AUTH_SOCK`) instead of " +
				"`private_key`, so that no key is kept in the Terraform state. The agent must be running and hold the key " +
				"wherever Terraform runs, including for refresh and destroy.",
		},
		"host_key": schema.StringAttribute{
			Optional: true, PlanModifiers: replaceIfKnown,
			MarkdownDescription: "The " + what + "'s SSH host key, pinned: an `authorized_keys`-format line " +
				"(`ssh-ed25519 AAAA...`) or a `SHA256:` fingerprint. Connections to any other key are refused. Required.",
		},
	}
}

// sshAuthOne requires exactly one of private_key and agent = true in a
// present ssh or bastion block.
type sshAuthOne struct{ block string }

func (v sshAuthOne) Description(context.Context) string {
	return "exactly one of private_key and agent = true must be set"
}
func (v sshAuthOne) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v sshAuthOne) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	a := req.ConfigValue.Attributes()
	key, _ := a["private_key"].(types.String)
	agent, _ := a["agent"].(types.Bool)
	if key.IsUnknown() || agent.IsUnknown() {
		return
	}
	switch hasKey, useAgent := !key.IsNull(), agent.ValueBool(); {
	case hasKey && useAgent:
		resp.Diagnostics.AddAttributeError(req.Path.AtName("agent"), "Conflicting SSH Credentials",
			fmt.Sprintf("The %s block sets both private_key and agent = true. Keep private_key, or remove it to log in through the ssh-agent at SSH_AUTH_SOCK.", v.block))
	case !hasKey && !useAgent:
		resp.Diagnostics.AddAttributeError(req.Path.AtName("private_key"), "Missing SSH Credentials",
			fmt.Sprintf("The %s block needs a way to log in: set private_key (e.g. file(\"~/.ssh/id_ed25519\")), or agent = true "+
				"to use the keys of the ssh-agent at SSH_AUTH_SOCK.", v.block))
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
		PrivateKey: types.StringNull(), Agent: types.BoolNull(), HostKey: types.StringNull()}, nil
}

type sshModel struct {
	Host       types.String  `tfsdk:"host"`
	Port       types.Int64   `tfsdk:"port"`
	User       types.String  `tfsdk:"user"`
	PrivateKey types.String  `tfsdk:"private_key"`
	Agent      types.Bool    `tfsdk:"agent"`
	HostKey    types.String  `tfsdk:"host_key"`
	Bastion    *bastionModel `tfsdk:"bastion"`
}

type bastionModel struct {
	Host       types.String `tfsdk:"host"`
	Port       types.Int64  `tfsdk:"port"`
	User       types.String `tfsdk:"user"`
	PrivateKey types.String `tfsdk:"private_key"`
	Agent      types.Bool   `tfsdk:"agent"`
	HostKey    types.String `tfsdk:"host_key"`
}
