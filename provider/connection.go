package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// connectionModel is the object pgbench_host exports as `connection_info`
// and the other resources take as `host_connection`. It carries everything needed to reach the
// host again and to find the runner on it, so that pgbench_hugepage_pool,
// pgbench_postgres_build and pgbench_ab_benchmark need no provider-side
// lookup of the host resource.
type connectionModel struct {
	// Mode is "ssh" or "local" ("ec2" hosts are reached over ssh too).
	Mode types.String `tfsdk:"mode"`
	Host types.String `tfsdk:"host"`
	Port types.Int64  `tfsdk:"port"`
	User types.String `tfsdk:"user"`
	// PrivateKey is PEM or OpenSSH; HostKey is an authorized_keys line or a
	// SHA256: fingerprint.
	PrivateKey types.String `tfsdk:"private_key"`
	HostKey    types.String `tfsdk:"host_key"`
	// Agent true logs in with the keys of the ssh-agent at SSH_AUTH_SOCK.
	Agent types.Bool `tfsdk:"agent"`
	// Bastion* describe an optional jump host; BastionHost "" means none.
	BastionHost       types.String `tfsdk:"bastion_host"`
	BastionPort       types.Int64  `tfsdk:"bastion_port"`
	BastionUser       types.String `tfsdk:"bastion_user"`
	BastionPrivateKey types.String `tfsdk:"bastion_private_key"`
	BastionHostKey    types.String `tfsdk:"bastion_host_key"`
	BastionAgent      types.Bool   `tfsdk:"bastion_agent"`
	// RunnerPath is the absolute path of pgbench-runner on the host.
	RunnerPath types.String `tfsdk:"runner_path"`
	// HostID is the id of the pgbench_host the connection belongs to.
	HostID types.String `tfsdk:"host_id"`
}

// connectionAttrTypes are the attribute types of the connection object, for
// building it as a types.Object.
var connectionAttrTypes = map[string]attr.Type{
	"mode":                types.StringType,
	"host":                types.StringType,
	"port":                types.Int64Type,
	"user":                types.StringType,
	"private_key":         types.StringType,
	"host_key":            types.StringType,
	"agent":               types.BoolType,
	"bastion_host":        types.StringType,
	"bastion_port":        types.Int64Type,
	"bastion_user":        types.StringType,
	"bastion_private_key": types.StringType,
	"bastion_host_key":    types.StringType,
	"bastion_agent":       types.BoolType,
	"runner_path":         types.StringType,
	"host_id":             types.StringType,
}

var connectionDescriptions = map[string]string{
	"mode":                "`ssh` or `local`.",
	"host":                "Address the host is reached at (ssh).",
	"port":                "SSH port.",
	"user":                "SSH user.",
	"private_key":         "SSH private key.",
	"host_key":            "The host's pinned SSH host key: an `authorized_keys` line or a `SHA256:` fingerprint.",
	"agent":               "`true` when the login uses the keys of the ssh-agent at `SSH_AUTH_SOCK` instead of `private_key`.",
	"bastion_host":        "Jump host address, empty when the host is reached directly.",
	"bastion_port":        "Jump host SSH port.",
	"bastion_user":        "Jump host SSH user.",
	"bastion_private_key": "Jump host SSH private key.",
	"bastion_host_key":    "Jump host's pinned SSH host key.",
	"bastion_agent":       "`true` when the jump host login uses the ssh-agent at `SSH_AUTH_SOCK`.",
	"runner_path":         "Absolute path of `pgbench-runner` on the host.",
	"host_id":             "ID of the `pgbench_host` this connection belongs to.",
}

// connectionInputAttribute is the `host_connection` argument of the resources that
// work on a host: required, and taken whole from
// `pgbench_host.<name>.connection_info`. Only its key fields are sensitive,
// so a plan shows which field changed. It replaces the resource only when
// it names another host (connectionIdentity); new credentials, port,
// jump host or runner path are stored in place.
func connectionInputAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Required: true,
		MarkdownDescription: "How to reach the host and its runner: set this to `pgbench_host.<name>.connection_info`. " +
			"Only another host replaces the resource (another EC2 instance, another address or pinned host key, or " +
			"`local` instead of SSH); new keys, an ssh-agent, another user, port or jump host are updated in place, " +
			"and nothing is built or measured again.",
		Attributes: connectionAttributes(false),
		PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplaceIf(connectionReplaceIf,
			"Replaces the resource when the connection names another host.",
			"Replaces the resource when the connection names another host.")},
	}
}

// connectionOutputAttribute is pgbench_host's computed `connection_info`.
// It cannot be called `connection`: Terraform reserves that name for
// provisioner connection blocks in every resource.
func connectionOutputAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed: true,
		MarkdownDescription: "Everything the other resources need to work on this host (its key fields are sensitive). " +
			"Pass it whole to their `host_connection` argument: `host_connection = pgbench_host.<name>.connection_info`.",
		Attributes: connectionAttributes(true),
	}
}

// connectionAttributes are the fields of the connection object, computed
// (connection_info) or optional (host_connection); only the private keys
// are sensitive.
func connectionAttributes(computed bool) map[string]schema.Attribute {
	attrs := map[string]schema.Attribute{}
	for name, t := range connectionAttrTypes {
		desc := connectionDescriptions[name]
		switch t {
		case types.Int64Type:
			attrs[name] = schema.Int64Attribute{Optional: !computed, Computed: computed, MarkdownDescription: desc}
		case types.BoolType:
			attrs[name] = schema.BoolAttribute{Optional: !computed, Computed: computed, MarkdownDescription: desc}
		default:
			attrs[name] = schema.StringAttribute{Optional: !computed, Computed: computed, MarkdownDescription: desc,
				Sensitive: name == "private_key" || name == "bastion_private_key"}
		}
	}
	return attrs
}

// connectionReplaceIf replaces a dependent resource when its connection
// names another host, or when that cannot be told yet.
func connectionReplaceIf(_ context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
	was, ok1 := connectionIdentity(req.StateValue)
	now, ok2 := connectionIdentity(req.PlanValue)
	resp.RequiresReplace = !ok1 || !ok2 || was != now
}

// connectionIdentity names the host a connection object reaches: the
// EC2 instance id, the local machine, or the SSH address with its pinned
// host key. Credentials, user, port, jump host and runner path are not
// part of it. ok is false while the object or a field it needs is unknown.
func connectionIdentity(obj types.Object) (id string, ok bool) {
	if obj.IsNull() || obj.IsUnknown() {
		return "", false
	}
	a := obj.Attributes()
	field := func(name string) (string, bool) {
		v, isStr := a[name].(types.String)
		if !isStr || v.IsUnknown() {
			return "", false
		}
		return v.ValueString(), true
	}
	mode, ok := field("mode")
	if !ok {
		return "", false
	}
	if mode == "local" {
		return "local", true
	}
	hostID, ok := field("host_id")
	if !ok {
		return "", false
	}
	if ec2InstanceIDPattern.MatchString(hostID) {
		return "ec2 " + hostID, true
	}
	host, ok1 := field("host")
	hostKey, ok2 := field("host_key")
	return "ssh " + host + " " + hostKey, ok1 && ok2
}

// objectValue converts the model to a types.Object for state.
func (c connectionModel) objectValue(ctx context.Context) (types.Object, error) {
	obj, diags := types.ObjectValueFrom(ctx, connectionAttrTypes, c)
	if diags.HasError() {
		return types.ObjectNull(connectionAttrTypes), fmt.Errorf("build connection object: %v", diags)
	}
	return obj, nil
}

// connectionFromObject reads a connection object from config, plan or state.
func connectionFromObject(ctx context.Context, obj types.Object) (connectionModel, error) {
	var c connectionModel
	if obj.IsNull() || obj.IsUnknown() {
		return c, errors.New("connection is not known yet")
	}
	diags := obj.As(ctx, &c, basetypes.ObjectAsOptions{})
	if diags.HasError() {
		return c, fmt.Errorf("read connection: %v", diags)
	}
	return c, nil
}

// dial opens an executor for the host the connection describes. Close it
// when done.
func (c connectionModel) dial(ctx context.Context) (remote.Executor, error) {
	switch c.Mode.ValueString() {
	case "local":
		return remote.NewLocal(), nil
	case "ssh", "ec2":
		cfg := remote.SSHConfig{
			Host:        c.Host.ValueString(),
			Port:        int(c.Port.ValueInt64()),
			User:        c.User.ValueString(),
			PrivateKey:  agentOrKey(c.Agent, c.PrivateKey),
			HostKey:     c.HostKey.ValueString(),
			DialTimeout: 30 * time.Second,
		}
		if b := c.BastionHost.ValueString(); b != "" {
			cfg.Bastion = &remote.SSHConfig{
				Host:        b,
				Port:        int(c.BastionPort.ValueInt64()),
				User:        c.BastionUser.ValueString(),
				PrivateKey:  agentOrKey(c.BastionAgent, c.BastionPrivateKey),
				HostKey:     c.BastionHostKey.ValueString(),
				DialTimeout: 30 * time.Second,
			}
		}
		return remote.DialSSH(ctx, cfg)
	default:
		return nil, fmt.Errorf("connection mode %q is not ssh or local; pass pgbench_host.<name>.connection_info", c.Mode.ValueString())
	}
}

// agentOrKey is the private key to log in with: none when agent is true,
// so that remote asks the ssh-agent at SSH_AUTH_SOCK.
func agentOrKey(agent types.Bool, key types.String) []byte {
	if agent.ValueBool() {
		return nil
	}
	return []byte(key.ValueString())
}

// runner is the client for the runner the connection names, over ex.
func (c connectionModel) runner(ex remote.Executor) runnerclient.Client {
	return runnerclient.New(ex, c.RunnerPath.ValueString())
}

// dialHost reads the host_connection object and connects to its host. On
// failure it adds a diagnostic saying what the connection was for and
// returns ok false. Close the executor when done.
func dialHost(ctx context.Context, obj types.Object, purpose string, diags *diag.Diagnostics) (connectionModel, remote.Executor, bool) {
	conn, err := connectionFromObject(ctx, obj)
	if err != nil {
		diags.AddAttributeError(path.Root("host_connection"), "Invalid Connection", err.Error())
		return conn, nil, false
	}
	ex, err := conn.dial(ctx)
	if err != nil {
		diags.AddError("Cannot Reach Host", fmt.Sprintf("Connecting to the host for %s failed: %v. Check that the host is up "+
			"and that host_connection comes from its pgbench_host.", purpose, err))
		return conn, nil, false
	}
	return conn, ex, true
}
