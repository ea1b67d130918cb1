package provider

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestABBenchmarkClientValidation: a client block whose host is the
// server's own is a plan-time error, and so is a client block without a
// host or with a bin dir it cannot use.
func TestABBenchmarkClientValidation(t *testing.T) {
	conn := func(host string) string {
		return fmt.Sprintf(`{
    mode     = "ssh"
    host     = %q
    port     = 22
    user     = "root"
    host_key = "SHA256:abc"
    host_id  = "root@%s:22"
  }`, host, host)
	}
	cfg := func(client string) string {
		return `
resource "pgbench_ab_benchmark" "ab" {
  host_connection = ` + conn("10.0.0.1") + abTwoVariants + abWorkload + client + `
}`
	}
	cases := []struct{ name, client, want string }{
		{"client is the server", `
  client {
    host_connection = ` + conn("10.0.0.1") + `
    bin_dir         = "/usr/lib/postgresql/15/bin"
  }`, `(?s)Client Host Is The Server's Host.*another pgbench_host`},
		{"client without a host", `
  client {
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, `(?s)Missing Client Host.*host_connection`},
		{"client without a bin dir", `
  client {
    host_connection = ` + conn("10.0.0.2") + `
  }`, `(?s)Missing Client Bin Dir`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tfresource.UnitTest(t, tfresource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps:                    []tfresource.TestStep{{Config: cfg(tc.client), PlanOnly: true, ExpectError: regexp.MustCompile(tc.want)}},
			})
		})
	}
}

// TestAccABBenchmarkClientHost: two real hosts on one bridge, a system
// build on each, an A/A campaign with a client block at two client counts.
// During the apply every pgbench of the campaign runs in the client host's
// namespace and every postgres in the server's; each cell has a verdict;
// the results name the client host's address and a round trip per run;
// after destroy nothing listens on the server's address.
func TestAccABBenchmarkClientHost(t *testing.T) {
	server, client, serverDir, hosts := newClientPair(t)
	localDir := filepath.Join(t.TempDir(), "report")
	config := hosts + fmt.Sprintf(`
resource "pgbench_ab_benchmark" "ab" {
  host_connection = pgbench_host.server.connection_info
  settings        = { shared_buffers = "32MB" }
  local_dir       = %q
  variant {
    name    = "a"
    bin_dir = pgbench_postgres_build.server.bin_dir
  }
  variant {
    name    = "b"
    bin_dir = pgbench_postgres_build.server.bin_dir
  }
  workload {
    scale      = 1
    clients    = [1, 2]
    duration   = "1s"
    iterations = 2
    warmup     = "0s"
  }
`+clientBlock+`}
`, localDir)

	// Every process of the campaign names the server's address (pgbench
	// -h) or a data directory under the server's install dir (postgres -D).
	w := testhost.WatchProcesses([]string{"pgbench", "postgres"}, []string{server.Addr, serverDir})
	serverNS, clientNS := server.NetnsInode(), client.NetnsInode()
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             nothingListensOn(server.Addr),
		Steps: []tfresource.TestStep{{
			Config: config,
			Check: func(st *terraform.State) error {
				seen := w.Stop()
				if pgbench := seen["pgbench"]; pgbench[clientNS] == 0 || len(pgbench) != 1 {
					return fmt.Errorf("pgbench seen in namespaces %v; want only the client host's (%d)", pgbench, clientNS)
				}
				if postgres := seen["postgres"]; postgres[serverNS] == 0 || len(postgres) != 1 {
					return fmt.Errorf("postgres seen in namespaces %v; want only the server's (%d)", postgres, serverNS)
				}
				if err := checkClientHostAttr(st, client.Addr, server.Addr); err != nil {
					return err
				}
				res, err := readResults(filepath.Join(localDir, "results.json"))
				if err != nil {
					return err
				}
				if res.Client == nil || res.Client.Address != client.Addr || res.Client.ServerAddress != server.Addr {
					return fmt.Errorf("results' client = %+v, want address %s reaching the server at %s", res.Client, client.Addr, server.Addr)
				}
				if len(res.Cells) != 2 {
					return fmt.Errorf("%d cells, want 2", len(res.Cells))
				}
				for _, c := range res.Cells {
					if len(c.Comparisons) != 1 || c.Comparisons[0].Verdict == "" {
						return fmt.Errorf("cell %d has no verdict: %+v", c.Clients, c.Comparisons)
					}
				}
				for _, r := range res.Runs {
					if r.NetworkRTTMS <= 0 {
						return fmt.Errorf("run %d has no round trip", r.Seq)
					}
				}
				return nil
			},
		}},
	})
}

// checkClientHostAttr checks the client_host attribute of
// pgbench_ab_benchmark.ab names the client host's address and the server's.
func checkClientHostAttr(st *terraform.State, clientAddr, serverAddr string) error {
	rs, ok := st.RootModule().Resources["pgbench_ab_benchmark.ab"]
	if !ok {
		return fmt.Errorf("no pgbench_ab_benchmark.ab in state")
	}
	var got report.ClientHost
	if err := json.Unmarshal([]byte(rs.Primary.Attributes["client_host"]), &got); err != nil {
		return fmt.Errorf("client_host %q is not JSON: %v", rs.Primary.Attributes["client_host"], err)
	}
	if got.Address != clientAddr || got.ServerAddress != serverAddr || got.PgbenchVersion == "" || got.CPUs <= 0 || got.MemoryBytes <= 0 || got.Kernel == "" {
		return fmt.Errorf("client_host = %+v, want address %s reaching %s, with its pgbench version, CPUs, memory and kernel", got, clientAddr, serverAddr)
	}
	return nil
}

// newClientPair is two test hosts on one bridge, server and client, and
// their configuration: a pgbench_host resource for each (the server's
// installed in serverDir), each with a system build of PostgreSQL 15.
func newClientPair(t *testing.T) (server, client *testhost.Host, serverDir, config string) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	server, client = testhost.NewPair(t)
	serverDir, clientDir := reachableTempDir(t), reachableTempDir(t)
	return server, client, serverDir, fmt.Sprintf(`
resource "pgbench_host" "server" {
  install_dir = %q
  ssh {
    host        = %q
    private_key = %q
    host_key    = %q
  }
}

resource "pgbench_host" "client" {
  install_dir = %q
  ssh {
    host        = %q
    private_key = %q
    host_key    = %q
  }
}

resource "pgbench_postgres_build" "server" {
  host_connection = pgbench_host.server.connection_info
  source {
    system = %q
  }
}

resource "pgbench_postgres_build" "client" {
  host_connection = pgbench_host.client.connection_info
  source {
    system = %q
  }
}
`, serverDir, server.Addr, server.ClientKeyPEM, server.HostKeyLine,
		clientDir, client.Addr, client.ClientKeyPEM, client.HostKeyLine,
		systemPGBin, systemPGBin)
}

// TestAccABBenchmarkClientHostTPCC: the two hosts again, a TPC-C campaign
// with a client block. While the client host cannot reach the server's
// port, the apply fails with an error naming both addresses before any
// measured run; once it can, the campaign runs its driver on the client
// host, over the network, and finds the real slow-down of a variant that
// scans tables instead of using their indexes.
func TestAccABBenchmarkClientHostTPCC(t *testing.T) {
	server, client, _, hosts := newClientPair(t)
	localDir := filepath.Join(t.TempDir(), "report")
	config := hosts + fmt.Sprintf(`
resource "pgbench_ab_benchmark" "ab" {
  host_connection = pgbench_host.server.connection_info
  settings        = { shared_buffers = "128MB", max_wal_size = "4GB" }
  local_dir       = %q
  variant {
    name    = "base"
    bin_dir = pgbench_postgres_build.server.bin_dir
  }
  variant {
    name     = "seqscan"
    bin_dir  = pgbench_postgres_build.server.bin_dir
    settings = { enable_indexscan = "off", enable_bitmapscan = "off", enable_indexonlyscan = "off" }
  }
  workload {
    mode       = "tpcc"
    warehouses = 1
    clients    = [2]
    duration   = "2s"
    iterations = 3
    warmup     = "1s"
  }
`+clientBlock+`}
`, localDir)
	// The client host's connections to PostgreSQL's port are refused by a
	// routing rule in its namespace; its SSH still works.
	block := []string{"ip", "rule", "add", "ipproto", "tcp", "dport", "5432", "prohibit"}
	unreachable := regexp.MustCompile(fmt.Sprintf(`(?s)client host.*\(%s\).*cannot.*reach.*the.*server.*at.*%s:5432`, regexp.QuoteMeta(client.Addr), regexp.QuoteMeta(server.Addr)))
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             nothingListensOn(server.Addr),
		Steps: []tfresource.TestStep{
			{
				PreConfig:   func() { client.Exec(t, block...) },
				Config:      config,
				ExpectError: unreachable,
			},
			{
				PreConfig: func() {
					block[2] = "del"
					client.Exec(t, block...)
				},
				Config: config,
				Check: func(st *terraform.State) error {
					if err := checkClientHostAttr(st, client.Addr, server.Addr); err != nil {
						return err
					}
					res, err := readResults(filepath.Join(localDir, "results.json"))
					if err != nil {
						return err
					}
					if len(res.Cells) != 1 || len(res.Cells[0].Comparisons) != 1 {
						return fmt.Errorf("cells %+v, want one with one comparison", res.Cells)
					}
					if cmp := res.Cells[0].Comparisons[0]; cmp.Candidate != "seqscan" || cmp.Verdict != report.VerdictSlower {
						return fmt.Errorf("seqscan vs base over the network = %+v, want slower", cmp)
					}
					for _, r := range res.Runs {
						if r.NOPM <= 0 || r.NetworkRTTMS <= 0 || r.Client == nil || r.Counters[campaign.ClientHostCounters+"os.cpu.user_s"] <= 0 {
							return fmt.Errorf("run %d: NOPM %v, rtt %v ms, client %+v: want NOPM, a round trip and the driver's CPU and OS counters on the client host",
								r.Seq, r.NOPM, r.NetworkRTTMS, r.Client)
						}
					}
					return nil
				},
			},
		},
	})
}

// clientBlock is the client block of a campaign on the client pair of
// clientPairConfig.
const clientBlock = `  client {
    host_connection = pgbench_host.client.connection_info
    bin_dir         = pgbench_postgres_build.client.bin_dir
  }
`

// nothingListensOn is a CheckDestroy: no server listens on addr:5432.
func nothingListensOn(addr string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "5432"), time.Second); err == nil {
			c.Close()
			return fmt.Errorf("a server still listens on %s:5432 after destroy", addr)
		}
		return nil
	}
}
