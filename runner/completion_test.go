package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// completionCases are command lines with the cursor at the last word, and
// what both shells must offer there: "FILES" for file name completion.
var completionCases = []struct {
	words []string
	want  string
}{
	{[]string{"hi"}, "history"},
	{[]string{"co"}, "compare completion"},
	{[]string{"history", ""}, "changes import"},
	{[]string{"history", "import", "--"}, "--json --database --help"},
	// An action's flags are its own.
	{[]string{"hugepages", "release", "--"}, "--json --state --help"},
	{[]string{"tune", "--state", "/x", "re"}, "revert"},
	// reserve is --state's value here, not the action.
	{[]string{"hugepages", "--state", "reserve", "st"}, "status"},
	{[]string{"help", "hugepages", "re"}, "release reserve"},
	{[]string{"completion", ""}, "bash zsh"},
	{[]string{"--ver"}, "--version"},
	{[]string{"hugepages", "release", "--state", ""}, "FILES"},
	{[]string{"report", ""}, "FILES"},
}

// The bash script, sourced by a real bash, registers the function and
// completes subcommands, actions and flags from the runner's own table.
func TestCompletionBash(t *testing.T) {
	bashPath := testhost.RequireCommand(t, "bash")
	_, env := runnerOnPath(t)
	var script strings.Builder
	script.WriteString("source <(pgbench-runner completion bash) || exit 1\ncomplete -p pgbench-runner\n")
	for _, c := range completionCases {
		words := append([]string{"pgbench-runner"}, c.words...)
		fmt.Fprintf(&script, "COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=(); _pgbench_runner\n", shellWords(words), len(words)-1)
		script.WriteString(`echo "${COMPREPLY[*]}"` + "\n")
	}
	out := runShell(t, env, bashPath, "-c", wrapFiles(script.String()))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1+len(completionCases) {
		t.Fatalf("bash printed %d lines, want %d:\n%s", len(lines), 1+len(completionCases), out)
	}
	if want := "complete -F _pgbench_runner pgbench-runner"; lines[0] != want {
		t.Errorf("complete -p pgbench-runner = %q, want %q", lines[0], want)
	}
	checkCompletions(t, "bash", lines[1:])
}

// wrapFiles makes compgen -f answer FILES in script, so that file name
// completion shows as one word whatever the directory holds.
func wrapFiles(script string) string {
	return `compgen() { if [[ $1 == -f ]]; then echo FILES; else builtin compgen "$@"; fi; }` + "\n" + script
}

// The zsh script, sourced after compinit and installed in $fpath, registers
// itself for pgbench-runner and offers what the bash one offers. compadd
// and _files only work inside a completion widget (from a terminal), so the
// test defines functions of those names that print what they are given.
func TestCompletionZsh(t *testing.T) {
	zshPath := testhost.RequireCommand(t, "zsh")
	bin, env := runnerOnPath(t)
	fpathDir := t.TempDir()
	gen := exec.Command(bin, "completion", "zsh")
	gen.Env = env
	script, err := gen.Output()
	if err != nil {
		t.Fatal(err)
	}
	// Installed the zsh way: a file named after the function in $fpath.
	if err := os.WriteFile(filepath.Join(fpathDir, "_pgbench-runner"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	var calls strings.Builder
	for _, c := range completionCases {
		words := append([]string{"pgbench-runner"}, c.words...)
		fmt.Fprintf(&calls, "words=(%s); CURRENT=%d; print -r -- \"$(@FN@)\"\n", shellWords(words), len(words))
	}
	stubs := "compadd() { shift; print -r -- \"$*\"; }\n_files() { print -r -- FILES; }\n"
	// compinit with zsh's own completion system only: scanning every
	// completion function installed takes seconds.
	const core = "${(M)fpath:#*/Completion/Base} ${(M)fpath:#*/Completion}"
	for _, mode := range []struct{ name, setup, fn string }{
		{"sourced", "fpath=(" + core + ")\nautoload -U compinit && compinit -u -D\nsource <(pgbench-runner completion zsh)\n", "_pgbench_runner"},
		{"fpath", "fpath=(" + fpathDir + " " + core + ")\nautoload -U compinit && compinit -u -D\n", "_pgbench-runner"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			home := t.TempDir() // compinit reads and writes in $ZDOTDIR
			out := runShell(t, append(env, "ZDOTDIR="+home, "HOME="+home), zshPath, "-f", "-c",
				mode.setup+"print -r -- ${_comps[pgbench-runner]}\n"+stubs+strings.ReplaceAll(calls.String(), "@FN@", mode.fn))
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 1+len(completionCases) {
				t.Fatalf("zsh printed %d lines, want %d:\n%s", len(lines), 1+len(completionCases), out)
			}
			if lines[0] != mode.fn {
				t.Errorf("$_comps[pgbench-runner] = %q, want %q", lines[0], mode.fn)
			}
			checkCompletions(t, "zsh", lines[1:])
		})
	}
}

// checkCompletions compares what a shell offered, one line per case, with
// completionCases. Candidates are compared as sets of words that the
// shell's prefix filter (bash) or the case's prefix (zsh, whose compadd
// filters inside the widget) leaves.
func checkCompletions(t *testing.T, shell string, lines []string) {
	t.Helper()
	for i, c := range completionCases {
		cur := c.words[len(c.words)-1]
		var got []string
		for _, w := range strings.Fields(lines[i]) {
			if w == "FILES" || strings.HasPrefix(w, cur) {
				got = append(got, w)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: pgbench-runner %s<TAB> offers %q, want %q", shell, strings.Join(c.words, " "), strings.Join(got, " "), c.want)
		}
	}
}

// shellWords quotes words for bash and zsh.
func shellWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}

func runShell(t *testing.T, env []string, shell string, args ...string) string {
	t.Helper()
	cmd := exec.Command(shell, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", shell, args, err, out)
	}
	return string(out)
}
