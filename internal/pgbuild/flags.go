package pgbuild

import (
	"strconv"

	"github.com/spf13/pflag"
)

// How a build is made, apart from its source and prefix, crosses to the
// runner as flags that `pgbench-runner build` and `pgbench-runner bisect`
// share: BindFlags declares them, Flags.Finish completes the Options, and
// Options.FlagArgs encodes Options back into the same flags.

// Flags decodes the build flags of a flag set into Options.
type Flags struct {
	o         *Options
	profiling bool
	ccache    bool
	ccacheDir string
}

// BindFlags declares the build flags into fs, bound to o; ccache is the
// default of --ccache. Parse fs, then call Finish.
func BindFlags(fs *pflag.FlagSet, o *Options, ccache bool) *Flags {
	f := &Flags{o: o}
	fs.StringArrayVar(&o.Patches, "patch", nil, "patch file applied with patch -p1 (repeatable, in order)")
	fs.StringArrayVar(&o.ConfigureFlags, "configure-flag", nil, "extra configure flag, e.g. --with-libnuma (repeatable)")
	fs.StringVar(&o.CFlags, "cflags", "", "CFLAGS for configure")
	fs.BoolVar(&f.profiling, "profiling", false, "build for profiling: add "+FramePointerFlags+" to the CFLAGS (-O2 when none are given), so perf unwinds call stacks with frame pointers")
	fs.IntVar(&o.Jobs, "jobs", 0, "make -j jobs (0: one per CPU)")
	fs.BoolVar(&o.InstallDeps, "install-deps", false, "install the missing build dependencies (ccache too with --ccache) with the host's package manager (apt-get, dnf or yum)")
	fs.BoolVar(&f.ccache, "ccache", ccache, "compile through ccache, so that builds of nearby sources reuse each other's objects, and configure's results for the same script, flags and compiler (the build key does not change)")
	fs.StringVar(&f.ccacheDir, "ccache-dir", DefaultCCacheDir, "ccache's cache directory, with --ccache")
	return f
}

// Profiling says --profiling was given.
func (f *Flags) Profiling() bool { return f.profiling }

// Finish completes the Options from the parsed flags: --profiling adds
// FramePointerFlags to the CFLAGS, --ccache sets CCacheDir.
func (f *Flags) Finish() {
	if f.profiling {
		f.o.CFlags = WithFramePointers(f.o.CFlags)
	}
	f.o.CCacheDir = ""
	if f.ccache {
		f.o.CCacheDir = f.ccacheDir
	}
}

// FlagArgs encodes the build flags of o (not its source, prefix or root)
// as arguments that BindFlags and Finish decode into the same values, each
// as one --flag=value; jobs only when set.
func (o *Options) FlagArgs() []string {
	var a []string
	add := func(flag, value string) { a = append(a, "--"+flag+"="+value) }
	for _, p := range o.Patches {
		add("patch", p)
	}
	for _, f := range o.ConfigureFlags {
		add("configure-flag", f)
	}
	if o.CFlags != "" {
		add("cflags", o.CFlags)
	}
	if o.Jobs != 0 {
		add("jobs", strconv.Itoa(o.Jobs))
	}
	if o.InstallDeps {
		add("install-deps", "true")
	}
	add("ccache", strconv.FormatBool(o.CCacheDir != ""))
	if o.CCacheDir != "" {
		add("ccache-dir", o.CCacheDir)
	}
	return a
}
