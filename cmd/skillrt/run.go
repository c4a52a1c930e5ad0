package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/dualforce/dualforce/runtime/app"
	"github.com/dualforce/dualforce/runtime/config"
)

const runHelp = `skillrt run: the runtime.

Brings the robot up (link init, drivers ready, calibration, smooth stand-up) and holds the
default pose until an operator sends mode "run" (or at once with --auto-run). Any safety fault
latches the damping controller until an operator resets it (estop/clear) and sends "stand".

Flags:
`

func runCmd(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlags("skillrt run", runHelp, stderr)
	path := fs.String("config", "", "the runtime config (YAML); print an example with: skillrt config")
	bank := fs.String("bank", "", "skill bank to load instead of the config's bank")
	autoRun := fs.Bool("auto-run", false, "run the skill as soon as the robot stands (simulation, demos)")
	skill := fs.Int("skill", -1, "bank latent to start with (index); -1: the best the bank's evaluation measured (among latents that passed its filter, the highest mean goal rate in a navigation bank, else the highest return; unevaluated: slot 0's latest)")
	status := fs.Duration("status", time.Second, "log a status line this often (0: never)")
	priority := fs.Int("rt-priority", 20, "SCHED_FIFO priority of the process (0: ordinary); without CAP_SYS_NICE it warns and goes on")
	var cpus cpuList
	fs.Var(&cpus, "cpus", "pin the control loop's thread to these CPUs (comma-separated, e.g. 3; best a core kept free with isolcpus); empty: any")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "debug, info, warn or error")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if *path == "" {
		fmt.Fprintln(stderr, "skillrt run: --config is required (skillrt config prints an example)")
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, "skillrt:", err)
		return 2
	}
	if *bank != "" {
		cfg.Bank = *bank
	}
	rt, err := app.Start(ctx, cfg, app.Options{AutoRun: *autoRun, Skill: *skill, RealtimePriority: *priority, ControlCPUs: cpus, StatusEvery: *status, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "skillrt:", err)
		return 1
	}
	if err := rt.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "skillrt:", err)
		return 1
	}
	return 0
}

// cpuList is a flag of comma-separated CPU numbers.
type cpuList []int

func (l *cpuList) String() string {
	s := make([]string, len(*l))
	for i, c := range *l {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

func (l *cpuList) Set(v string) error {
	*l = (*l)[:0]
	for f := range strings.SplitSeq(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return fmt.Errorf("CPU %q: want a number >= 0", f)
		}
		*l = append(*l, c)
	}
	return nil
}

func configCmd(stdout io.Writer) int {
	_, _ = io.WriteString(stdout, config.Example)
	return 0
}
