//go:build linux

package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/runtime/mqtt"
	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
)

// Fleet test sizes: ten robots; the isolation phase switches one robot this many times, the
// latency phase every robot this many times.
const (
	fleetSize         = 10
	isolationSwitches = 10
	switchesPerRobot  = 20
	fleetPolicyPeriod = 20 * time.Millisecond // the test bank's 50 Hz
)

// TestFleetOnOneBroker runs ten simulated robots on one external mosquitto (TLS, a password
// account per robot, the documented ACL), each its own runtime (Start: core, MQTT adapter,
// flight recorder) under its own robot id, in lockstep with its own emulated master board, paced
// to the wall clock by sleeping: ten real-time 1 kHz loops with their boards do not fit on 2
// shared cores, and lockstep never misses a period however busy the machine is, while commands,
// the broker and the recordings live in wall time as deployed. An operator switches the skill of
// one robot several times while the other nine must see nothing, then switches every robot in
// turn. The flight recordings show isolation: each robot's core applied exactly the commands sent
// to it, in order, and switched skills exactly that often; the operator's view of
// solo/v1/+/events agrees. Command-to-applied (the operator's publish to the stamp of the tick
// whose core applied it) is reported per robot with the broker's and the runtimes' CPU, not
// asserted: it is a wall-clock figure of a shared machine. A command waits for the next policy
// tick by design, so with publishes at a random phase it is the broker's delivery plus 0 to one
// policy period, and its p99 one policy period plus about the delivery's p99.
func TestFleetOnOneBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("ten runtimes on one broker for about 20 s; not in -short")
	}
	n := fleetSize
	if v := os.Getenv("DUALFORCE_FLEET_SIZE"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("DUALFORCE_FLEET_SIZE=%q: want 2 or more robots", v)
		}
	}
	ids := make([]string, n)
	accounts := []mqtttest.Account{mqtttest.Operator}
	for i := range ids {
		ids[i] = fmt.Sprintf("solo-fleet-%02d", i)
		accounts = append(accounts, mqtttest.Robot(ids[i]))
	}
	broker := mqtttest.Start(t, mqtttest.Options{Accounts: accounts})
	events := broker.Subscribe(t, mqtttest.Operator, "solo/v1/+/events")

	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	robots := make([]*harness, n)
	for i, id := range ids {
		robots[i] = startFleetRobot(t, id, broker, log)
	}
	for _, r := range robots {
		events.WaitFor(t, 30*time.Second, r.cfg.RobotID+" running", func(m mqtttest.Message) bool {
			return m.Topic == "solo/v1/"+r.cfg.RobotID+"/events" && strings.Contains(m.Payload, `"type":"mode_change"`) && strings.Contains(m.Payload, `"mode":"run"`)
		})
	}
	ops := make([]*mqtt.Operator, n)
	for i, id := range ids {
		op, err := mqtt.DialOperator(ctx, mqtt.OperatorConfig{RobotID: id, Broker: broker.URL(),
			Credentials: mqtt.Credentials(mqtttest.Operator), TLS: mqtt.TLSFiles{CAFile: broker.Certs.CA}})
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		ops[i] = op
	}

	cpuStart := [2]time.Duration{processCPU(t, broker.PID()), processCPU(t, os.Getpid())}
	windowStart := time.Now()
	sent := make([][]sentCommand, n)
	target := make([]int, n) // every robot starts on latent 0
	send := func(robot int) {
		time.Sleep(rand.N(fleetPolicyPeriod)) // a random phase of the policy period
		target[robot] = 1 - target[robot]
		idx := target[robot]
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		at := time.Now()
		reply, err := ops[robot].SelectSkill(cctx, mqtt.SkillSelector{Index: &idx})
		if err != nil {
			t.Fatalf("%s: switch to latent %d: %v", ids[robot], idx, err)
		}
		sent[robot] = append(sent[robot], sentCommand{id: reply.ID, at: at})
	}
	// Isolation: robot 0 alone.
	isolationStart := time.Now()
	for range isolationSwitches {
		send(0)
	}
	isolationEnd := time.Now()
	// Command-to-applied: every robot in turn.
	for range switchesPerRobot {
		for r := range robots {
			send(r)
		}
	}
	window := time.Since(windowStart)
	cpuEnd := [2]time.Duration{processCPU(t, broker.PID()), processCPU(t, os.Getpid())}
	// A reply can overtake its robot's skill_switch event on the way to the operator: wait until
	// the operator has seen as many switches as were commanded (or 10 s; the per-robot check
	// below then says whose are missing).
	commanded := 0
	for _, s := range sent {
		commanded += len(s)
	}
	isSwitch := mqtttest.Containing(`"type":"skill_switch"`)
	for deadline := time.Now().Add(10 * time.Second); events.Count(isSwitch) < commanded && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	for _, r := range robots {
		r.stop(t)
	}

	switchesSeen := map[string]int{}
	for _, m := range events.Messages() {
		if strings.Contains(m.Payload, `"type":"skill_switch"`) {
			switchesSeen[strings.TrimSuffix(strings.TrimPrefix(m.Topic, "solo/v1/"), "/events")]++
		}
	}
	crossed := 0
	var all []time.Duration
	for i, r := range robots {
		ticks := r.recording(t)
		appliedAt := map[string]time.Time{}
		var order []string
		for _, tk := range ticks {
			for _, id := range tk.commands {
				order = append(order, id)
				appliedAt[id] = tk.at
			}
		}
		want := make([]string, len(sent[i]))
		for k, s := range sent[i] {
			want[k] = s.id
		}
		// Every command this robot's core applied was sent to it, each once and in order.
		if !slices.Equal(order, want) {
			crossed++
			t.Errorf("%s applied commands %v, want exactly its own %v", r.cfg.RobotID, order, want)
		}
		switches, _ := eventsOf(ticks, "skill_switch")
		if len(switches) != len(want) || switchesSeen[r.cfg.RobotID] != len(want) {
			t.Errorf("%s: %d skill switches recorded, %d seen by the operator, %d commanded", r.cfg.RobotID, len(switches), switchesSeen[r.cfg.RobotID], len(want))
		}
		if i > 0 {
			for _, at := range appliedAt {
				if !at.Before(isolationStart) && !at.After(isolationEnd) {
					t.Errorf("%s applied a command while only %s was commanded", r.cfg.RobotID, ids[0])
				}
			}
		}
		var policyTicks []time.Time
		for _, tk := range ticks {
			if tk.action != nil {
				policyTicks = append(policyTicks, tk.at)
			}
		}
		var applied []time.Duration
		firstTick := 0 // commands applied at the first policy tick after their publish
		for _, s := range sent[i] {
			at, ok := appliedAt[s.id]
			if !ok {
				continue
			}
			applied = append(applied, at.Sub(s.at))
			k, _ := slices.BinarySearchFunc(policyTicks, s.at, func(p, t time.Time) int { return p.Compare(t) })
			if k < len(policyTicks) && policyTicks[k].Equal(at) {
				firstTick++
			}
		}
		if len(applied) == 0 {
			continue
		}
		all = append(all, applied...)
		slices.Sort(applied)
		t.Logf("%s: %d commands, command-to-applied p50 %v p99 %v max %v; %d longer than one policy period, %d applied at the first policy tick after the publish",
			r.cfg.RobotID, len(applied), ms(quantile(applied, 0.5)), ms(quantile(applied, 0.99)), ms(applied[len(applied)-1]), longerThan(applied, fleetPolicyPeriod), firstTick)
	}
	slices.Sort(all)
	t.Logf("all %d robots: command-to-applied p50 %v p99 %v, %d of %d longer than one policy period (%v); isolation: robot 0 switched %d times alone, %d robots applied a command not sent to them",
		n, ms(quantile(all, 0.5)), ms(quantile(all, 0.99)), longerThan(all, fleetPolicyPeriod), len(all), fleetPolicyPeriod, isolationSwitches, crossed)
	t.Logf("CPU over %v of commanding, in %% of one core (2 cores here): mosquitto %.1f%%; the %d runtimes with their simulated boards and the operators (this process) %.1f%%, %.1f%% a robot",
		window.Round(time.Millisecond), cpuShare(cpuEnd[0]-cpuStart[0], window), n,
		cpuShare(cpuEnd[1]-cpuStart[1], window), cpuShare(cpuEnd[1]-cpuStart[1], window)/float64(n))
}

type sentCommand struct {
	id string
	at time.Time
}

// startFleetRobot starts one robot of the fleet: a runtime in lockstep with its own emulated
// board, on broker under its own robot id.
func startFleetRobot(t *testing.T, id string, broker *mqtttest.Mosquitto, log *slog.Logger) *harness {
	t.Helper()
	cfg := testConfig(t)
	cfg.RobotID = id
	externalBroker(t, &cfg, broker, mqtttest.Robot(id))
	return startHarness(t, cfg, Options{AutoRun: true, Board: boardtest.FirstOrder(t, board.Config{}), Logger: log.With("robot", id)})
}

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// processCPU reads a process's user and system CPU time from /proc.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (which may hold spaces and parentheses) start with the
	// state, field 3; utime and stime are fields 14 and 15.
	_, rest, _ := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// longerThan counts the durations above limit.
func longerThan(d []time.Duration, limit time.Duration) int {
	n := 0
	for _, v := range d {
		if v > limit {
			n++
		}
	}
	return n
}

func cpuShare(cpu, wall time.Duration) float64 { return 100 * cpu.Seconds() / wall.Seconds() }

func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
