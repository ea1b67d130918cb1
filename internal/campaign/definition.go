package campaign

import (
	"fmt"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
)

// Field is one setting of a campaign definition, described once: how the
// runner spells it, where pgbench_ab_benchmark puts it, its default and what
// it means. The runner's flags and the provider's schema descriptions both
// read Fields, so a default is written in one place.
type Field struct {
	// Flag is the runner flag without its dashes; "" for a part of a
	// variant, which travels inside --variant.
	Flag string
	// Attribute is the provider's attribute path, dotted
	// ("workload.scale"); "" when Terraform does not expose the field.
	Attribute string
	// Default is the value taken when the field is not given, in the flag's
	// syntax; "" when the zero value is the default.
	Default string
	// Usage is a one-line description, plain text (no Markdown, no
	// backquotes: pflag reads those as the name of the value).
	Usage string
}

// MaxVariantName is the longest variant name: names become directory and
// file names and benchstat labels, and 63 is PostgreSQL's identifier limit.
const MaxVariantName = 63

// Fields is every setting of a campaign, in the order the runner's help
// and the encoder list them.
var Fields = []Field{
	{Flag: "out", Usage: "campaign directory: journal, results, reports and raw logs (required)"},
	{Flag: "variant", Attribute: "variant",
		Usage: `a variant: name=N,bin=DIR[,huge_pages=on|off|try] (two or more; the first is the baseline); a ',' or '\' inside a value is written '\,' or '\\'`},
	{Attribute: "variant.name",
		Usage: fmt.Sprintf("variant name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d characters", MaxVariantName)},
	{Attribute: "variant.bin_dir",
		Usage: "directory with " + strings.Join(pgctl.BinDirPrograms, ", ") + ", e.g. the bin_dir of a pgbench_postgres_build"},
	{Flag: "variant-set", Attribute: "variant.settings",
		Usage: "postgresql.conf setting of one variant, NAME:KEY=VALUE (repeatable); VALUE is taken as it is, any character included (set=k=v;k=v inside --variant is read too)"},
	{Attribute: "variant.huge_pages", Default: "try",
		Usage: "huge pages: on, off or try (PostgreSQL's own default); with on the runner checks that the server really took its memory from the huge-page pool"},
	{Flag: "set", Attribute: "settings", Usage: "postgresql.conf setting shared by all variants, KEY=VALUE (repeatable); a variant's own settings win"},
	{Flag: "mode", Attribute: "workload.mode", Default: "select-only",
		Usage: "workload: select-only, tpcb, simple-update or custom (pgbench), or tpcc (TPC-C's five transactions, no keying or think time, as HammerDB runs them; the verdicts are on NOPM)"},
	{Flag: "script", Attribute: "workload.script", Usage: "path on the host of the pgbench script of mode custom"},
	{Flag: "scale", Attribute: "workload.scale", Default: "10", Usage: "scale factor (pgbench -s) of the dataset; pgbench modes only"},
	{Flag: "warehouses", Attribute: "workload.warehouses",
		Usage: "warehouses of the TPC-C dataset (mode tpcc, required, at least 1; about 100 MB each): the client counts drive them, each client with a home warehouse in turn"},
	{Flag: "clients", Attribute: "workload.clients", Default: "1", Usage: "client counts, comma separated, e.g. 1,16,64"},
	{Flag: "threads", Attribute: "workload.threads", Default: "auto", Usage: "threads of pgbench (-j): a number, or auto = min(clients, CPUs)"},
	{Flag: "duration", Attribute: "workload.duration", Default: "60s", Usage: "length of each measured run, in whole seconds (60s, 2m)"},
	{Flag: "iterations", Attribute: "workload.iterations", Default: "10",
		Usage: "runs per variant and client count, or auto: each client count runs a first stage of pairs, then as many as its interval needs to reach the target half-width (alternating order only)"},
	{Flag: "target-ci", Attribute: "workload.target_ci_pct", Default: "1",
		Usage: "with iterations auto: the half-width, in percent, that each client count's interval of the delta aims at"},
	{Flag: "min-iterations", Attribute: "workload.min_iterations", Default: "6",
		Usage: "with iterations auto: the pairs each client count runs before it estimates how many it needs (at least 3)"},
	{Flag: "max-iterations", Attribute: "workload.max_iterations", Default: "30",
		Usage: "with iterations auto: the most iterations a client count runs, whatever its interval"},
	{Flag: "protocol", Attribute: "workload.protocol", Default: "simple", Usage: "query protocol: simple, extended or prepared"},
	{Flag: "warmup", Attribute: "workload.warmup", Default: "auto",
		Usage: "unrecorded pgbench run after each server start, before its first measured run: whole seconds, 0 for none, or auto (a quarter of the duration, 1 to 60 seconds)"},
	{Flag: "checkpoint-before", Attribute: "workload.checkpoint_before", Default: "false", Usage: "run CHECKPOINT before each measured run"},
	{Flag: "restart", Attribute: "workload.restart", Default: RestartNever,
		Usage: "when servers restart: never (only to switch variants), cell (at each new cell) or run (before every run)"},
	{Flag: "order", Attribute: "order", Default: OrderAlternate,
		Usage: "run order: alternate (ABAB at each client count, the first variant rotated each iteration) or randomized (with seed)"},
	{Flag: "seed", Attribute: "seed", Usage: "seed of the randomized order, recorded with the results; without one the runner takes it from the clock, pgbench_ab_benchmark from the definition"},
	{Flag: "server-numa", Attribute: "server_numa", Usage: "pinning of the postmaster with numactl, e.g. cpunodebind=0,membind=0"},
	{Flag: "client-numa", Attribute: "client_numa", Usage: "pinning of pgbench with numactl, e.g. cpunodebind=1,membind=1; with a client host, on that host (its numactl)"},
	{Flag: "client-host", Attribute: "client.host_connection",
		Usage: "host that runs every pgbench, over SSH, as [user@]host[:port]: the servers stay on this host and listen only on the address that host reaches them by, for its address alone, with scram-sha-256 and a password made for the campaign; with mode tpcc the driver runs there too (this runner, copied into the campaign's directory there: the host must be of this one's architecture)"},
	{Flag: "client-host-key", Usage: "host key the client host must present: an authorized_keys line or a SHA256: fingerprint (required with client-host)"},
	{Flag: "client-bin-dir", Attribute: "client.bin_dir", Usage: "directory with pgbench on the client host, e.g. the bin_dir of a pgbench_postgres_build there (required with a client host)"},
	{Flag: "client-key-file", Usage: "file with the SSH private key of the client host, - for standard input; without it the ssh-agent's keys are tried. How the runner reaches the host, not part of the campaign"},
	{Flag: "sampling-rate", Default: "auto",
		Usage: fmt.Sprintf("share of transactions a measured run writes to its per-transaction log (pgbench --sampling-rate): a fraction in (0, 1], or auto, which keeps a run's log under %d lines whatever the TPS", MaxLogLines)},
	{Flag: "counters", Attribute: "observe.counters", Default: "true",
		Usage: "record the OS and PostgreSQL counters of every measured run (CPU time by kind, context switches, page faults, NUMA, the data directory's disk; pg_stat_database, checkpoints, pg_stat_io) and pgbench's own CPU use, which flags client-bound runs; with a client host, that host's CPU time, context switches and page faults too (client_host.os.*)"},
	{Flag: "wait-sample-interval", Attribute: "observe.wait_sample_interval", Default: "100ms",
		Usage: "with counters: how often pg_stat_activity is sampled for the wait events of active backends during a measured run, over one connection; 0 for never"},
	{Flag: "profile", Attribute: "observe.profile", Default: ProfileNone,
		Usage: "perf profiles of the server: none, one-per-cell (one extra profiled run per variant and client count, left out of the statistics) or every-run (every measured run profiled, all kept in the statistics); needs perf"},
	{Flag: "profile-frequency", Attribute: "observe.profile_frequency", Default: "499",
		Usage: "with profile: samples per second per CPU that perf record takes"},
	{Flag: "alpha", Attribute: "alpha", Default: "0.05", Usage: "significance level of the verdicts, more than 0 and at most 0.5"},
	{Flag: "data-dir", Usage: "root of the per-variant data directories (default OUT/data)"},
	{Flag: "clone", Default: "false", Usage: "copy the first variant's loaded data directory to variants with the same catalog version"},
}

// FieldByFlag is the field the runner spells --flag; the zero Field when
// there is none.
func FieldByFlag(flag string) Field {
	for _, f := range Fields {
		if f.Flag == flag && flag != "" {
			return f
		}
	}
	return Field{}
}

// FieldByAttribute is the field at the provider's attribute path (dotted,
// without list indexes: "variant.huge_pages"); the zero Field when there is
// none.
func FieldByAttribute(attr string) Field {
	for _, f := range Fields {
		if f.Attribute == attr && attr != "" {
			return f
		}
	}
	return Field{}
}

// DefaultConfig is a definition with every field at its default: what the
// runner's flags hold before any is given, and where the provider starts
// before it applies a configuration.
func DefaultConfig() *Config {
	c, err := Decode(nil)
	if err != nil {
		panic("campaign: the defaults in Fields do not decode: " + err.Error())
	}
	return c
}
