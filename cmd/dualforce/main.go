// Command dualforce is the offline side of the project: it collects the simulated Solo12
// datasets and inspects them, trains skill banks on them and evaluates the banks through the
// runtime core in simulation.
//
// Usage:
//
//	dualforce <command> [flags] [arguments]
//	dualforce <command> -h
//
// Each command lives in its own file and registers itself with register in an init function.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command overview
	// run executes the command with the arguments after its name. Errors wrapping errUsage (or
	// flag.ErrHelp) are the caller's mistakes and exit with status 2 (0 for help).
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; call it from an init function of the command's file.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("dualforce: command " + c.name + " registered twice")
	}
	commands[c.name] = c
}

// runFunc is a command's (or a method's) entry point.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// methods returns the run function of a command whose first argument names a method (train
// smodice, fit bc): usage is its help text, what names the methods in error messages.
func methods(usage, what string, byName map[string]runFunc) runFunc {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 {
			fmt.Fprint(stderr, usage)
			return usagef("missing method")
		}
		switch name := args[0]; name {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, usage)
			return nil
		default:
			if run, ok := byName[name]; ok {
				return run(ctx, args[1:], stdout, stderr)
			}
		}
		return usagef("unknown %s %q", what, args[0])
	}
}

// exitInterrupted is the shell's status for a process a SIGINT ended (128 + 2).
const exitInterrupted = 130

// errUsage marks a wrong command line.
var errUsage = errors.New("usage")

func usagef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

func main() {
	ctx, stop := interruptContext(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interruptContext is cancelled by the first SIGINT or SIGTERM. A command then winds down (a
// trainer writes its checkpoint), which takes a while where it does not look at the context:
// reading a million-row data set, say. So the first signal also gives the signals back their
// default action: a second one ends the process at once, as it would a program that catches
// none.
func interruptContext(stderr io.Writer) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-signals:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			fmt.Fprintln(stderr, "dualforce: stopping; interrupt again to quit at once")
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel()
	}
}

// run dispatches to a command and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		overview(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		overview(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dualforce: unknown command %q\n\n", args[0])
		overview(stderr)
		return 2
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "dualforce %s: %v (see dualforce %s -h)\n", c.name, err, c.name)
		return 2
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// Ctrl-C or SIGTERM: the command has said what it kept (a checkpoint to --resume);
		// "context canceled" would read like a failure of its own.
		fmt.Fprintf(stderr, "dualforce %s: interrupted\n", c.name)
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "dualforce %s: %v\n", c.name, err)
	return 1
}

func overview(w io.Writer) {
	fmt.Fprint(w, `dualforce turns simulated Solo12 demonstrations into datasets and skill banks.

Usage:
  dualforce <command> [flags] [arguments]

Commands:
`)
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-10s %s\n", name, commands[name].summary)
	}
	fmt.Fprint(w, `
Run 'dualforce <command> -h' for a command's flags. Ctrl-C (or SIGTERM) stops a command
cleanly (a trainer writes its checkpoint to --resume from); a second one quits at once.
`)
}

// newFlagSet returns a flag set that reports to stderr and returns errors instead of exiting.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// oneOrMore, as parseFlags' operand count, asks for at least one operand.
const oneOrMore = -1

// parseFlags parses args, turning flag errors into usage errors, and
// checks that exactly operands arguments (oneOrMore: at least one) follow the flags.
func parseFlags(fs *flag.FlagSet, args []string, operands int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() == operands || (operands == oneOrMore && fs.NArg() > 0):
		return nil
	case operands == oneOrMore:
		return usagef("want at least one argument after the flags")
	case operands == 0:
		return usagef("unexpected arguments %q", fs.Args())
	default:
		return usagef("want %d argument(s) after the flags, got %d: %q", operands, fs.NArg(), fs.Args())
	}
}
