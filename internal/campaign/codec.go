package campaign

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// A campaign crosses from the provider to the runner as `pgbench-runner ab`
// arguments: Args encodes a Config, BindFlags and Decode turn the arguments
// back into the same Config. Each variant is one --variant (name, bin dir,
// huge pages; ',' and '\' escaped with '\') and one --variant-set per
// setting, whose value is a whole argument and so needs no escaping.

// Flags decodes the campaign flags of a flag set into a Config.
type Flags struct {
	fs          *pflag.FlagSet
	c           *Config
	variants    []string
	variantSets []string
	sets        []string
	clients     string
	seed        int64
}

// BindFlags declares the campaign's flags (one per Field with a Flag) into
// fs, bound to c, with their defaults and usage from Fields. Parse fs, then
// call Decode.
func BindFlags(fs *pflag.FlagSet, c *Config) *Flags {
	f := &Flags{fs: fs, c: c}
	u := func(flag string) string { return FieldByFlag(flag).Usage }
	fs.StringVar(&c.OutDir, "out", "", u("out"))
	fs.StringArrayVar(&f.variants, "variant", nil, u("variant"))
	fs.StringArrayVar(&f.variantSets, "variant-set", nil, u("variant-set"))
	fs.StringArrayVar(&f.sets, "set", nil, u("set"))
	fs.StringVar(&c.Mode, "mode", "", u("mode"))
	fs.StringVar(&c.Script, "script", "", u("script"))
	fs.IntVar(&c.Scale, "scale", 0, u("scale"))
	fs.IntVar(&c.Warehouses, "warehouses", 0, u("warehouses"))
	fs.StringVar(&f.clients, "clients", "", u("clients"))
	fs.StringVar(&c.Threads, "threads", "", u("threads"))
	fs.DurationVar(&c.Duration, "duration", 0, u("duration"))
	fs.Var(autoInt(&c.Iterations, &c.IterationsAuto), "iterations", u("iterations"))
	fs.Float64Var(&c.TargetCIPct, "target-ci", 0, u("target-ci"))
	fs.IntVar(&c.MinIterations, "min-iterations", 0, u("min-iterations"))
	fs.IntVar(&c.MaxIterations, "max-iterations", 0, u("max-iterations"))
	fs.StringVar(&c.Protocol, "protocol", "", u("protocol"))
	fs.Var(autoDuration(&c.Warmup, &c.WarmupAuto), "warmup", u("warmup"))
	fs.BoolVar(&c.CheckpointBefore, "checkpoint-before", false, u("checkpoint-before"))
	fs.StringVar(&c.Restart, "restart", "", u("restart"))
	fs.StringVar(&c.Order, "order", "", u("order"))
	fs.Int64Var(&f.seed, "seed", 0, u("seed"))
	fs.StringVar(&c.ServerNUMA, "server-numa", "", u("server-numa"))
	fs.StringVar(&c.ClientNUMA, "client-numa", "", u("client-numa"))
	fs.StringVar(&c.ClientHost, "client-host", "", u("client-host"))
	fs.StringVar(&c.ClientHostKey, "client-host-key", "", u("client-host-key"))
	fs.StringVar(&c.ClientBinDir, "client-bin-dir", "", u("client-bin-dir"))
	fs.StringVar(&c.ClientKeyFile, "client-key-file", "", u("client-key-file"))
	fs.StringVar(&c.SamplingRate, "sampling-rate", "", u("sampling-rate"))
	fs.BoolVar(&c.Counters, "counters", false, u("counters"))
	fs.DurationVar(&c.WaitSampleInterval, "wait-sample-interval", 0, u("wait-sample-interval"))
	fs.StringVar(&c.Profile, "profile", "", u("profile"))
	fs.IntVar(&c.ProfileFrequency, "profile-frequency", 0, u("profile-frequency"))
	fs.Float64Var(&c.Alpha, "alpha", 0, u("alpha"))
	fs.StringVar(&c.DataDir, "data-dir", "", u("data-dir"))
	fs.BoolVar(&c.Clone, "clone", false, u("clone"))
	for _, fd := range Fields {
		if fd.Flag == "" || fd.Default == "" {
			continue
		}
		fl := fs.Lookup(fd.Flag)
		if err := fl.Value.Set(fd.Default); err != nil {
			panic(fmt.Sprintf("campaign: default %q of --%s: %v", fd.Default, fd.Flag, err))
		}
		fl.DefValue = fd.Default
	}
	return f
}

// Decode completes the Config from the parsed flags and fills what is
// left with the defaults. Malformed values are *ValidationError values,
// joined; Validate checks the rest.
func (f *Flags) Decode() error {
	c := f.c
	var errs []error
	c.Variants = nil
	index := map[string]int{}
	for i, s := range f.variants {
		v, err := parseVariant(s)
		if err != nil {
			errs = append(errs, Invalid(variantAt(i, ""), "Invalid Variant", "%v", err))
			continue
		}
		if _, dup := index[v.Name]; !dup {
			index[v.Name] = len(c.Variants)
		}
		c.Variants = append(c.Variants, v)
	}
	for _, s := range f.variantSets {
		name, kv, _ := strings.Cut(s, ":")
		k, val, ok := strings.Cut(kv, "=")
		i, known := index[name]
		switch {
		case !ok || k == "":
			errs = append(errs, Invalid(at("variant-set"), "Invalid Variant Setting", "%s %q: want NAME:KEY=VALUE, e.g. stock:work_mem=64MB", ref("variant-set"), s))
		case !known:
			errs = append(errs, Invalid(at("variant-set"), "Invalid Variant Setting", "%s %q: no %s is named %q", ref("variant-set"), s, ref("variant"), name))
		default:
			c.Variants[i].Settings[k] = val
		}
	}
	c.Settings = map[string]string{}
	for _, s := range f.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			errs = append(errs, Invalid(at("set"), "Invalid Setting", "%s %q: want KEY=VALUE, e.g. shared_buffers=1GB", ref("set"), s))
			continue
		}
		c.Settings[k] = v
	}
	cl, err := parseClients(f.clients)
	if err != nil {
		errs = append(errs, Invalid(at("clients"), "Invalid Client Count", "%v", err))
	}
	c.Clients = cl
	c.Seed, c.SeedSet = f.seed, f.fs.Changed("seed")
	if !c.IterationsAuto {
		for _, flag := range []string{"target-ci", "min-iterations", "max-iterations"} {
			if f.fs.Changed(flag) {
				errs = append(errs, Invalid(at(flag), "Adaptive Setting Without Adaptive Iterations", "%s applies only with %s auto; %s is %d", ref(flag), ref("iterations"), ref("iterations"), c.Iterations))
			}
		}
		c.TargetCIPct, c.MinIterations, c.MaxIterations = 0, 0, 0
	}
	c.Defaults()
	return errors.Join(errs...)
}

// Decode is the Config that `pgbench-runner ab` args define, campaign flags
// only.
func Decode(args []string) (*Config, error) {
	var c Config
	fs := newFlagSet()
	f := BindFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("decode campaign arguments: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("decode campaign arguments: unexpected argument %q", fs.Arg(0))
	}
	return &c, f.Decode()
}

func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("campaign", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// Args encodes the Config as `pgbench-runner ab` arguments: every field of
// the definition, defaults included, in the order of Fields, maps sorted,
// each as one --flag=value, so equal definitions give equal arguments. The
// seed is written only when it is set; --out and --data-dir only when they
// are. Call Defaults first for a definition that leaves fields zero.
func (c *Config) Args() []string {
	var a []string
	add := func(flag, value string) { a = append(a, "--"+flag+"="+value) }
	if c.OutDir != "" {
		add("out", c.OutDir)
	}
	for _, v := range c.Variants {
		add("variant", "name="+escapeVariant(v.Name)+",bin="+escapeVariant(v.BinDir)+",huge_pages="+escapeVariant(v.HugePages))
	}
	for _, v := range c.Variants {
		for _, k := range sortedKeys(v.Settings) {
			add("variant-set", v.Name+":"+k+"="+v.Settings[k])
		}
	}
	for _, k := range sortedKeys(c.Settings) {
		add("set", k+"="+c.Settings[k])
	}
	add("mode", c.Mode)
	add("script", c.Script)
	add("scale", strconv.Itoa(c.Scale))
	// Only TPC-C has warehouses: other campaigns keep the arguments (and
	// so the key) they had before there was a TPC-C.
	if c.Warehouses != 0 {
		add("warehouses", strconv.Itoa(c.Warehouses))
	}
	clients := make([]string, len(c.Clients))
	for i, n := range c.Clients {
		clients[i] = strconv.Itoa(n)
	}
	add("clients", strings.Join(clients, ","))
	add("threads", c.Threads)
	add("duration", formatDuration(c.Duration))
	if c.IterationsAuto {
		add("iterations", "auto")
		add("target-ci", strconv.FormatFloat(c.TargetCIPct, 'g', -1, 64))
		add("min-iterations", strconv.Itoa(c.MinIterations))
		add("max-iterations", strconv.Itoa(c.MaxIterations))
	} else {
		add("iterations", strconv.Itoa(c.Iterations))
	}
	add("protocol", c.Protocol)
	if c.WarmupAuto {
		add("warmup", "auto")
	} else {
		add("warmup", formatDuration(c.Warmup))
	}
	add("checkpoint-before", strconv.FormatBool(c.CheckpointBefore))
	add("restart", c.Restart)
	add("order", c.Order)
	if c.SeedSet {
		add("seed", strconv.FormatInt(c.Seed, 10))
	}
	add("server-numa", c.ServerNUMA)
	add("client-numa", c.ClientNUMA)
	// Only a campaign with a client host names one: the others keep the
	// arguments (and so the key) they had before.
	for _, f := range []struct{ flag, v string }{
		{"client-host", c.ClientHost}, {"client-host-key", c.ClientHostKey}, {"client-bin-dir", c.ClientBinDir}, {"client-key-file", c.ClientKeyFile},
	} {
		if f.v != "" {
			add(f.flag, f.v)
		}
	}
	add("sampling-rate", c.SamplingRate)
	add("counters", strconv.FormatBool(c.Counters))
	add("wait-sample-interval", c.WaitSampleInterval.String())
	add("profile", c.Profile)
	add("profile-frequency", strconv.Itoa(c.ProfileFrequency))
	add("alpha", strconv.FormatFloat(c.Alpha, 'g', -1, 64))
	if c.DataDir != "" {
		add("data-dir", c.DataDir)
	}
	add("clone", strconv.FormatBool(c.Clone))
	return a
}

// autoFlag is a flag whose value is a T or "auto".
type autoFlag[T any] struct {
	v      *T
	auto   *bool
	typ    string // in the help: N|auto
	what   string // in an error: a number
	parse  func(string) (T, error)
	format func(T) string
}

func (f *autoFlag[T]) Type() string { return f.typ }

func (f *autoFlag[T]) String() string {
	switch {
	case f.v == nil:
		return ""
	case *f.auto:
		return "auto"
	}
	return f.format(*f.v)
}

func (f *autoFlag[T]) Set(s string) error {
	var zero T
	if s == "auto" {
		*f.v, *f.auto = zero, true
		return nil
	}
	v, err := f.parse(s)
	if err != nil {
		return fmt.Errorf("%q is neither %s nor auto", s, f.what)
	}
	*f.v, *f.auto = v, false
	return nil
}

func autoInt(n *int, auto *bool) *autoFlag[int] {
	return &autoFlag[int]{v: n, auto: auto, typ: "N|auto", what: "a number", parse: strconv.Atoi, format: strconv.Itoa}
}

func autoDuration(d *time.Duration, auto *bool) *autoFlag[time.Duration] {
	return &autoFlag[time.Duration]{v: d, auto: auto, typ: "duration|auto", what: "a duration (30s, 2m, 0)", parse: time.ParseDuration, format: formatDuration}
}

// formatDuration writes whole seconds as "60s" rather than "1m0s".
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// definitionArgs is Args without where the campaign is kept, which is not
// what it is.
func (c *Config) definitionArgs() []byte {
	d := *c
	// Alpha changes the verdicts, not the measurement: a campaign at
	// another alpha is the same campaign, recomputed (pgbench-runner compare).
	d.OutDir, d.DataDir, d.Alpha = "", "", 0
	// How the client host is reached is not what it is: its key and the
	// host key it presents may change, the campaign does not.
	d.ClientHostKey, d.ClientKeyFile = "", ""
	// What a run observes at its defaults leaves the key as it was before
	// it could be chosen, so a campaign started by an earlier version
	// resumes in the same directory.
	var args []string
	for _, a := range d.Args() {
		if !observedAtDefault(a) {
			args = append(args, a)
		}
	}
	return []byte(strings.Join(args, "\x00"))
}

// observedAtDefault says arg is one of the observing flags at its default.
func observedAtDefault(arg string) bool {
	for _, flag := range []string{"counters", "wait-sample-interval", "profile", "profile-frequency"} {
		if arg == "--"+flag+"="+FieldByFlag(flag).Default {
			return true
		}
	}
	return false
}

// Key names a campaign by its definition: equal definitions have equal keys
// (so a retried apply finds the journal to resume) and any change of a field
// that changes the measurement changes the key (alpha does not).
func (c *Config) Key() string {
	sum := sha256.Sum256(c.definitionArgs())
	return hex.EncodeToString(sum[:])[:16]
}

// SeedFromDefinition gives a randomized order without a seed one derived
// from the rest of the definition. A clock seed would shuffle differently,
// and so make a journal the runner refuses, each time a failed apply is
// retried.
func (c *Config) SeedFromDefinition() {
	if c.Order != OrderRandomized || c.SeedSet {
		return
	}
	sum := sha256.Sum256(c.definitionArgs())
	c.Seed, c.SeedSet = int64(binary.BigEndian.Uint64(sum[:8])>>1), true
}

// escapeVariant escapes what would end a value inside --variant.
func escapeVariant(s string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(s)
}

// parseVariant parses `name=N,bin=DIR[,huge_pages=on|off|try]`, and the
// older `set=k=v;k=v` part a person may still type.
func parseVariant(s string) (Variant, error) {
	v := Variant{Settings: map[string]string{}}
	for _, part := range splitVariant(s) {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return v, fmt.Errorf("variant %q: %q is not key=value", s, part)
		}
		val = unescapeVariant(val)
		switch k {
		case "name":
			v.Name = val
		case "bin":
			v.BinDir = val
		case "huge_pages":
			v.HugePages = val
		case "set":
			for _, kv := range strings.Split(val, ";") {
				if kv == "" {
					continue
				}
				sk, sv, ok := strings.Cut(kv, "=")
				if !ok || sk == "" {
					return v, fmt.Errorf("variant %q: setting %q is not k=v", s, kv)
				}
				v.Settings[strings.TrimSpace(sk)] = sv
			}
		default:
			return v, fmt.Errorf("variant %q: unknown key %q (want name, bin, huge_pages or set)", s, k)
		}
	}
	if v.Name == "" {
		return v, fmt.Errorf("variant %q: name= is missing", s)
	}
	if v.BinDir == "" {
		return v, fmt.Errorf("variant %q: bin= is missing", s)
	}
	return v, nil
}

// splitVariant splits on unescaped commas that start a new key=, so a typed
// set= value may still hold a comma that no key follows
// (`set=search_path=a,b`).
func splitVariant(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == ',' && keyStart.MatchString(s[i+1:]):
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

var keyStart = regexp.MustCompile(`^[A-Za-z_]+=`)

func unescapeVariant(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseClients parses "1,16,64"; Validate checks the counts.
func parseClients(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("client count %q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
