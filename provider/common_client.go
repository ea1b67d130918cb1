package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// campaignClientModel is the optional client block: the host every pgbench
// of the campaign runs on.
type campaignClientModel struct {
	HostConnection types.Object `tfsdk:"host_connection"`
	BinDir         types.String `tfsdk:"bin_dir"`
}

// campaignClientBlock is the schema of the client block.
func campaignClientBlock() schema.SingleNestedBlock {
	conn := connectionInputAttribute()
	conn.Required = false
	conn.Optional = true
	conn.MarkdownDescription = "How to reach the client host: `pgbench_host.<name>.connection_info` of another host than the server's. " +
		"The runner on the server's host reaches it over SSH with these credentials (its key travels on the runner's standard input, never on a command line), " +
		"so the address must be one the server's host reaches it by."
	return schema.SingleNestedBlock{
		MarkdownDescription: "Run every pgbench on another host, over the network, when the server's host must not share its CPUs, caches and memory " +
			"bandwidth with the client. Every PostgreSQL server stays on the server's host and listens only on the address the client host " +
			"reaches it by; `pg_hba.conf` admits only the client host's address, with scram-sha-256 and a password made for the campaign " +
			"(in no log, result or state). The round trip between the hosts is measured before each cell and recorded with the runs, with the " +
			"client host's facts and its pgbench's CPU use (client-bound runs). With mode `tpcc` the TPC-C driver runs there too: the runner " +
			"copies itself into the campaign's directory on the client host, which must be of the server's architecture (the dataset is " +
			"loaded and checked on the server's host). The client host is locked for the campaign. " +
			"Without this block pgbench runs on the server's host.",
		PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		Attributes: map[string]schema.Attribute{
			"host_connection": conn,
			"bin_dir": schema.StringAttribute{Optional: true, MarkdownDescription: campaignDoc("client.bin_dir"),
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		},
	}
}

// client reads the client block into c: the client host's address, its
// pinned host key and its bin dir; its key reaches the runner on standard
// input (see clientKey).
func (r *campaignReader) client(c *campaign.Config, m *campaignClientModel) {
	if m == nil {
		return
	}
	cp := path.Root("client")
	r.str(&c.ClientBinDir, m.BinDir, cp.AtName("bin_dir"))
	hp := cp.AtName("host_connection")
	switch {
	case m.HostConnection.IsUnknown():
		r.u.add(hp)
		// Known or not, the definition has a client host.
		c.ClientHost, c.ClientHostKey = "unknown", "unknown"
		return
	case m.HostConnection.IsNull():
		r.d.AddAttributeError(hp, "Missing Client Host", "The client block needs host_connection = pgbench_host.<name>.connection_info of the host that runs pgbench.")
		return
	}
	conn, err := connectionFromObject(r.ctx, m.HostConnection)
	if err != nil {
		r.d.AddAttributeError(hp, "Invalid Client Host", err.Error())
		return
	}
	if conn.Host.IsUnknown() || conn.Port.IsUnknown() || conn.User.IsUnknown() || conn.HostKey.IsUnknown() {
		r.u.add(hp)
		c.ClientHost, c.ClientHostKey = "unknown", "unknown"
		return
	}
	switch {
	case conn.Mode.ValueString() == "local":
		r.d.AddAttributeError(hp, "Local Client Host", "The client host must be reached over SSH from the server's host; a local pgbench_host is the machine running Terraform.")
		return
	case conn.BastionHost.ValueString() != "":
		r.d.AddAttributeError(hp, "Client Host Behind A Jump Host", "The server's host reaches the client host directly; a client host behind a jump host is not supported.")
		return
	case conn.Agent.ValueBool():
		r.d.AddAttributeError(hp, "Client Host Key In An Agent", "The server's host needs the client host's private key (it has no ssh-agent of the machine running Terraform); give private_key on its pgbench_host.")
		return
	}
	port := int(conn.Port.ValueInt64())
	if port == 0 {
		port = 22
	}
	user := conn.User.ValueString()
	if user == "" {
		user = "root"
	}
	c.ClientHost = user + "@" + net.JoinHostPort(conn.Host.ValueString(), strconv.Itoa(port))
	c.ClientHostKey = conn.HostKey.ValueString()
	c.ClientKeyFile = "-"
}

// feed gives the runner rc the client host's private key on its standard
// input (the campaign's --client-key-file -); without a client block it
// does nothing. ok is false after a diagnostic.
func (m *campaignClientModel) feed(ctx context.Context, rc *runnerclient.Client, d *diag.Diagnostics) (ok bool) {
	if m == nil || m.HostConnection.IsNull() {
		return true
	}
	conn, err := connectionFromObject(ctx, m.HostConnection)
	if err != nil {
		d.AddAttributeError(path.Root("client").AtName("host_connection"), "Invalid Client Host", err.Error())
		return false
	}
	rc.Stdin = []byte(conn.PrivateKey.ValueString())
	return true
}

// checkClientHost refuses a client block whose host is the server's own,
// when both are known.
func checkClientHost(server types.Object, m *campaignClientModel, d *diag.Diagnostics) {
	if m == nil {
		return
	}
	s, ok1 := connectionIdentity(server)
	c, ok2 := connectionIdentity(m.HostConnection)
	if ok1 && ok2 && s == c {
		d.AddAttributeError(path.Root("client").AtName("host_connection"), "Client Host Is The Server's Host", fmt.Sprintf(
			"The client block names the server's own host (%s): pgbench would still share the server's CPUs. "+
				"Give it the connection_info of another pgbench_host, or remove the block to run pgbench on the server's host.", c))
	}
}
