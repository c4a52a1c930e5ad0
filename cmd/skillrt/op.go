package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dualforce/dualforce/runtime/mqtt"
)

const opHelp = `skillrt op: operator commands to one robot over MQTT.

Usage:
  skillrt op [flags] list                    the bank's skills (index, name, tags)
  skillrt op [flags] switch INDEX|NAME       run another skill from the next policy tick
  skillrt op [flags] recall ELEMENT=WEIGHT...
                                             run the stored skill that best serves the reward
                                             sum WEIGHT * ELEMENT over named observation elements
                                             (base_lin_vel.x, base_ang_vel.z, joint_pos.FL_KFE,
                                             height_map[60], ...); the reply names the skill and
                                             its score (bank features) or distance (FRE encoding)
  skillrt op [flags] goal X Y [YAW]          navigate to (X, Y) m, heading YAW rad (default 0), in
                                             the world (motion-capture) frame
  skillrt op [flags] mode stand|run|damp|stop
  skillrt op [flags] stop                    damp, then motors off
  skillrt op [flags] estop | clear           latch / reset the operator E-stop
  skillrt op [flags] watch [--telemetry]     print state changes and events as JSON lines

Credentials: --credentials-file (one line username:password, chmod 600) or SOLO_MQTT_USERNAME and
SOLO_MQTT_PASSWORD. Never on the command line.

Flags:
`

func opCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("skillrt op", opHelp, stderr)
	broker := fs.String("broker", "tcp://127.0.0.1:1883", "the robot's broker: tcp://host:port or ssl://host:port")
	robot := fs.String("robot", "solo-1", "robot id")
	credFile := fs.String("credentials-file", "", "file holding username:password")
	caFile := fs.String("ca-file", "", "ssl://: PEM roots the broker's certificate must chain to")
	telemetry := fs.Bool("telemetry", false, "watch: include 10 Hz telemetry")
	maxDistance := fs.Float64("max-distance", 0, "recall: the farthest stored latent from the reward's FRE encoding to accept; 0 = the robot's configured threshold")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	creds, err := mqtt.LoadCredentials(*credFile, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "skillrt op:", err)
		return 2
	}
	op, err := mqtt.DialOperator(ctx, mqtt.OperatorConfig{RobotID: *robot, Broker: *broker, Credentials: creds, TLS: mqtt.TLSFiles{CAFile: *caFile}})
	if err != nil {
		fmt.Fprintln(stderr, "skillrt op:", err)
		return 1
	}
	defer op.Close()
	enc := json.NewEncoder(stdout)
	reply := func(r mqtt.Reply, err error) int {
		if err != nil {
			fmt.Fprintln(stderr, "skillrt op:", err)
			return 1
		}
		_ = enc.Encode(r)
		if !r.OK {
			return 1
		}
		return 0
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch verb := rest[0]; {
	case verb == "list":
		b, err := op.Bank(cctx)
		if err != nil {
			fmt.Fprintln(stderr, "skillrt op:", err)
			return 1
		}
		_ = enc.Encode(b)
		return 0
	case verb == "switch" && len(rest) == 2:
		name := rest[1]
		sel := mqtt.SkillSelector{Name: &name}
		if i, err := strconv.Atoi(rest[1]); err == nil {
			sel = mqtt.SkillSelector{Index: &i}
		}
		return reply(op.SelectSkill(cctx, sel))
	case verb == "recall" && len(rest) >= 2:
		reward, err := parseReward(rest[1:])
		if err != nil {
			fmt.Fprintln(stderr, "skillrt op:", err)
			return 2
		}
		return reply(op.Recall(cctx, reward, *maxDistance))
	case verb == "goal" && (len(rest) == 3 || len(rest) == 4):
		var g [3]float64
		for i, a := range rest[1:] {
			v, err := strconv.ParseFloat(a, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				fmt.Fprintf(stderr, "skillrt op: goal: %q is not a finite number (goal X Y [YAW], m and rad)\n", a)
				return 2
			}
			g[i] = v
		}
		return reply(op.Goal(cctx, g[0], g[1], g[2]))
	case verb == "mode" && len(rest) == 2:
		return reply(op.SetMode(cctx, rest[1]))
	case verb == "stop":
		return reply(op.Stop(cctx))
	case verb == "estop":
		return reply(op.EStop(cctx))
	case verb == "clear":
		return reply(op.ClearEStop(cctx))
	case verb == "watch":
		err := op.Watch(ctx, *telemetry, func(u mqtt.Update) { _ = enc.Encode(u) })
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "skillrt op:", err)
			return 1
		}
		return 0
	}
	fs.Usage()
	return 2
}

// parseReward reads ELEMENT=WEIGHT arguments.
func parseReward(args []string) (map[string]float64, error) {
	reward := make(map[string]float64, len(args))
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		w, err := strconv.ParseFloat(value, 64)
		if !ok || name == "" || err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("recall: %q is not ELEMENT=WEIGHT with a finite weight (for example base_lin_vel.x=1)", a)
		}
		if _, dup := reward[name]; dup {
			return nil, fmt.Errorf("recall: element %q given twice", name)
		}
		reward[name] = w
	}
	return reward, nil
}
