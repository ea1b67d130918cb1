package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

type completionCmd struct{}

func init() { register(completionCmd{}) }

func (completionCmd) Name() string { return "completion" }
func (completionCmd) Synopsis() string {
	return "print a bash or zsh completion script for the subcommands, their actions and flags: " +
		"source <(pgbench-runner completion bash) in ~/.bashrc, or the same with zsh after compinit in ~/.zshrc"
}
func (completionCmd) Actions() []string { return []string{"bash", "zsh"} }

func (c completionCmd) Run(_ context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name()+" bash|zsh", c.Synopsis(), &o)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return o.emit(nil, usagef("want one shell: bash or zsh"), nil)
	}
	var b strings.Builder
	switch shell := fs.Arg(0); shell {
	case "bash":
		writeCompletion(&b, bashCompletion, completionNodes())
	case "zsh":
		writeCompletion(&b, zshCompletion, completionNodes())
	default:
		return o.emit(nil, usagef("unknown shell %q: want bash or zsh", shell), nil)
	}
	return o.emit(map[string]string{"shell": fs.Arg(0), "script": b.String()}, nil, func(w io.Writer) {
		io.WriteString(w, b.String())
	})
}

// completionNode is what completes after a command path: "" (the top
// level), "history", "history import", "help hugepages".
type completionNode struct {
	path   string
	words  []string // subcommands or actions
	flags  []string // --name, and -x for a shorthand
	valued []string // the flags that take a value as the next word
}

// completionNodes is the completion table, read from the commands
// themselves: their names, their actions and the flag sets their Run
// builds (flagsOf), hidden flags left out.
func completionNodes() []completionNode {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	nodes := []completionNode{{words: append(append([]string{}, names...), "help"), flags: []string{"--help", "-h", "--version"}}}
	help := completionNode{path: "help", words: names}
	nodes = append(nodes, help)
	for _, n := range names {
		c := commands[n]
		actions := actionsOf(c)
		nodes = append(nodes, flagsNode(n, actions, flagsOf(c, nil)))
		for _, a := range actions {
			nodes = append(nodes, flagsNode(n+" "+a, nil, flagsOf(c, []string{a})))
		}
		if len(actions) > 0 {
			nodes = append(nodes, completionNode{path: "help " + n, words: actions})
		}
	}
	return nodes
}

// flagsOf is the flag set c's Run builds for args, got without running it.
func flagsOf(c command, args []string) *pflag.FlagSet {
	var got *pflag.FlagSet
	describe = func(fs *pflag.FlagSet) { got = fs }
	defer func() { describe = nil }()
	_ = c.Run(context.Background(), args)
	return got
}

func flagsNode(path string, words []string, fs *pflag.FlagSet) completionNode {
	n := completionNode{path: path, words: words}
	if fs == nil {
		return n
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		names := []string{"--" + f.Name}
		if f.Shorthand != "" {
			names = append(names, "-"+f.Shorthand)
		}
		n.flags = append(n.flags, names...)
		if f.NoOptDefVal == "" { // bool flags have one: they take no value
			n.valued = append(n.valued, names...)
		}
	})
	n.flags = append(n.flags, "--help")
	return n
}

// writeCompletion writes script with the table of nodes in place of
// @NODES@: a shell function, the same in bash and zsh, that sets wds,
// flags and valued for a command path.
func writeCompletion(w io.Writer, script string, nodes []completionNode) {
	var b strings.Builder
	b.WriteString("_pgbench_runner_node() {\n\tcase $1 in\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "\t'%s') wds='%s' flags='%s' valued='%s' ;;\n", n.path,
			strings.Join(n.words, " "), strings.Join(n.flags, " "), strings.Join(n.valued, " "))
	}
	b.WriteString("\t*) wds='' flags='' valued='' ;;\n\tesac\n}\n")
	io.WriteString(w, strings.Replace(script, "@NODES@", b.String(), 1))
}

// completionWalk finds the command path in the words before the cursor
// (@WORD@ is the shell's i-th word): words that are subcommands or actions
// extend it, flags are passed over, and so is the value after a flag that
// takes one. Shared by both scripts, so they complete alike.
const completionWalk = `	local cmdpath='' w i skip=0 wds flags valued
	for ((i = @FIRST@; i < @CWORD@; i++)); do
		w=@WORD@
		_pgbench_runner_node "$cmdpath"
		if ((skip)); then
			skip=0
			continue
		fi
		if [[ $w == -* ]]; then
			[[ $w != *=* && " $valued " == *" $w "* ]] && skip=1
			continue
		fi
		[[ " $wds " == *" $w "* ]] && cmdpath=${cmdpath:+$cmdpath }$w
	done
	_pgbench_runner_node "$cmdpath"
`

var bashCompletion = `# bash completion for pgbench-runner: source <(pgbench-runner completion bash)
_pgbench_runner() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
` + strings.NewReplacer("@FIRST@", "1", "@CWORD@", "COMP_CWORD", "@WORD@", "${COMP_WORDS[i]}").Replace(completionWalk) + `	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
	elif [[ " $valued " == *" $prev "* || -z $wds ]]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	else
		COMPREPLY=($(compgen -W "$wds" -- "$cur"))
	fi
}
@NODES@complete -F _pgbench_runner pgbench-runner
`

var zshCompletion = `#compdef pgbench-runner
# zsh completion for pgbench-runner: source <(pgbench-runner completion zsh)
# after compinit, or save it as _pgbench-runner in a directory of $fpath.
_pgbench_runner() {
	local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
` + strings.NewReplacer("@FIRST@", "2", "@CWORD@", "CURRENT", "@WORD@", "${words[i]}").Replace(completionWalk) + `	if [[ $cur == -* ]]; then
		compadd -- ${=flags}
	elif [[ " $valued " == *" $prev "* || -z $wds ]]; then
		_files
	else
		compadd -- ${=wds}
	fi
}
@NODES@if [[ $funcstack[1] == _pgbench-runner ]]; then
	_pgbench_runner "$@"
else
	compdef _pgbench_runner pgbench-runner
fi
`
