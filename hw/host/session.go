package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// DefaultMAC is a locally administered source address for hosts that have no better one.
var DefaultMAC = proto.MAC{0x02, 0xdf, 0x40, 0x57, 0x00, 0x01}

// Config describes a Session. Zero fields take the SDK's values.
type Config struct {
	// Interface names the link in messages, e.g. "enp3s0" or "udp 127.0.0.1:9750".
	Interface string
	MAC       proto.MAC // source address of our frames (zero: DefaultMAC)
	SessionID uint16    // 0: a random non-zero id
	// InitTimeout is how long Connect (and Listen) wait for the board (default 2500 ms).
	InitTimeout time.Duration
	// InitInterval is the time between two inits (default 1 ms).
	InitInterval time.Duration
	// SensorTimeout is how long Receive waits for a valid sensor packet (default 50 ms). The
	// timeout is checked every SensorTimeout/5, so it fires up to 20% late.
	SensorTimeout time.Duration
	Logger        *slog.Logger // nil: slog.Default()
}

type phase uint8

const (
	idle phase = iota
	controlling
	listening
)

// sendRingSize is how many command send times are kept to match against last_cmd_index: a
// command acknowledged later than this many commands is not timed.
const sendRingSize = 1024

type sendRecord struct {
	index uint16
	valid bool
	at    time.Duration // since the session's epoch
}

// Session is one host session on a link. Create it with New.
type Session struct {
	conn  link.Conn
	cfg   Config
	log   *slog.Logger
	epoch time.Time

	phase     phase
	id        uint16
	connected uint8 // drivers that answered SPI autodetection, from the ack
	nextIndex uint16
	lastValid time.Duration
	lastSat   proto.Saturation

	rx, tx     [proto.MaxFrameLen]byte
	lastSensor []byte        // payload of the last decoded sensor packet, inside rx
	lastPass   time.Duration // when Receive last found no sensor packet (read at least once since)
	sawAck     bool          // a listener saw an ack since the session's last sensor packet
	sendTimes  [sendRingSize]sendRecord
	stats      counters
}

// New returns an unconnected session on conn, which it uses until the caller closes it.
func New(conn link.Conn, cfg Config) *Session {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.InitTimeout, 2500 * time.Millisecond}, {&cfg.InitInterval, time.Millisecond}, {&cfg.SensorTimeout, 50 * time.Millisecond}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.MAC == (proto.MAC{}) {
		cfg.MAC = DefaultMAC
	}
	if cfg.Interface == "" {
		cfg.Interface = "the link"
	}
	for cfg.SessionID == 0 {
		cfg.SessionID = uint16(rand.Uint32())
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Session{conn: conn, cfg: cfg, log: log, epoch: time.Now(), id: cfg.SessionID}
}

// SessionID is the session's id: ours, or in listener mode the one adopted.
func (s *Session) SessionID() uint16 { return s.id }

// SPIConnected has bit i set for each driver that answered the board's SPI autodetection.
func (s *Session) SPIConnected() uint8 { return s.connected }

func (s *Session) now() time.Duration { return time.Since(s.epoch) }

// Connect sends inits until the board acknowledges our session, and returns its ack. The board
// then waits up to 1 s for the first command: send it at once. Errors: ErrNoAnswer (wrapped, with
// what to check), *proto.VersionMismatchError, *OtherSessionError, proto.ErrProtocolV3, the
// link's errors, or ctx's.
func (s *Session) Connect(ctx context.Context) (proto.Ack, error) {
	if s.phase != idle {
		return proto.Ack{}, errors.New("host: session already connected")
	}
	init := proto.Init{Version: proto.Version, SessionID: s.id}
	if err := init.Marshal(proto.PayloadBuffer(s.tx[:], proto.InitLen)); err != nil {
		return proto.Ack{}, err
	}
	n, err := proto.PutHeader(s.tx[:], s.cfg.MAC, proto.InitLen)
	if err != nil {
		return proto.Ack{}, err
	}
	if err := s.conn.SetReadTimeout(s.cfg.InitInterval); err != nil {
		return proto.Ack{}, fmt.Errorf("host: %w", err)
	}
	start := s.now()
	nextInit, inits := start, 0
	// other describes the latest packet of another session, if busy.
	other, busy := &OtherSessionError{Interface: s.cfg.Interface, Ours: s.id}, false
	for {
		if err := ctx.Err(); err != nil {
			return proto.Ack{}, err
		}
		now := s.now()
		if now-start >= s.cfg.InitTimeout {
			if busy {
				return proto.Ack{}, other
			}
			return proto.Ack{}, fmt.Errorf("%w on %s after %v (%d inits sent): check that the cable is plugged into "+
				"this interface (see `ip link`), that the board is powered and shows the red fade of "+
				"WAITING_FOR_INIT (power it on before starting this program, and power-cycle it if it does not), "+
				"and that its firmware speaks protocol v%d", ErrNoAnswer, s.cfg.Interface, s.cfg.InitTimeout, inits, proto.Version)
		}
		if now >= nextInit {
			if err := s.conn.WriteFrame(s.tx[:n]); err != nil {
				return proto.Ack{}, fmt.Errorf("host: send init on %s: %w", s.cfg.Interface, err)
			}
			inits++
			nextInit = now + s.cfg.InitInterval
		}
		kind, p, err := s.read()
		switch {
		case errors.Is(err, link.ErrTimeout) || errors.Is(err, errSkip):
			continue
		case errors.Is(err, proto.ErrProtocolV3):
			return proto.Ack{}, fmt.Errorf("host: the master board on %s: %w", s.cfg.Interface, err)
		case err != nil:
			return proto.Ack{}, err
		}
		switch kind {
		case proto.KindAck:
			var ack proto.Ack
			_ = ack.Unmarshal(p) // the length was checked by ParsePayload
			if ack.Version != proto.Version {
				return ack, fmt.Errorf("host: the master board on %s: %w", s.cfg.Interface,
					&proto.VersionMismatchError{Board: ack.Version, Host: proto.Version})
			}
			if ack.SessionID != s.id {
				other.Theirs, other.Acked = ack.SessionID, true
				busy = true
				continue
			}
			s.start(controlling, ack.SPIConnected)
			s.logConnected(ack)
			return ack, nil
		case proto.KindSensor:
			// During its autodetection for our init the board still stamps the previous session's
			// id (0 after boot), so another id means a busy board only if no ack follows.
			if theirs := binary.LittleEndian.Uint16(p); theirs != s.id {
				other.Theirs, other.Acked = theirs, false
				busy = true
			}
		}
	}
}

func (s *Session) logConnected(ack proto.Ack) {
	s.log.Info("master board acknowledged the session", "interface", s.cfg.Interface, "session", s.id,
		"spi_connected", fmt.Sprintf("%06b", ack.SPIConnected))
	if missing := ^ack.SPIConnected & (1<<proto.NumDrivers - 1); missing != 0 {
		s.log.Warn("some motor drivers did not answer the board's SPI autodetection: check their cables and power",
			"interface", s.cfg.Interface, "missing_drivers", fmt.Sprintf("%06b", missing))
	}
}

// Listen waits for the board's sensor packets and adopts their session id: a listener session
// sends nothing and follows the session, even when the controlling program starts a new one. A
// new session is a change of id or an ack (the board sends them while it starts a session, with
// the same id or another); its loss accounting starts afresh, so the restart of sensor_index is
// not counted as lost packets.
func (s *Session) Listen(ctx context.Context) error {
	if s.phase != idle {
		return errors.New("host: session already connected")
	}
	if err := s.conn.SetReadTimeout(s.cfg.SensorTimeout / 5); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	start := s.now()
	for s.now()-start < s.cfg.InitTimeout {
		if err := ctx.Err(); err != nil {
			return err
		}
		kind, p, err := s.read()
		switch {
		case errors.Is(err, link.ErrTimeout) || errors.Is(err, errSkip):
			continue
		case errors.Is(err, proto.ErrProtocolV3):
			return fmt.Errorf("host: the master board on %s: %w", s.cfg.Interface, err)
		case err != nil:
			return err
		}
		if kind == proto.KindSensor {
			s.id = binary.LittleEndian.Uint16(p)
			s.start(listening, 1<<proto.NumDrivers-1)
			s.log.Info("listening to the master board", "interface", s.cfg.Interface, "session", s.id)
			return nil
		}
	}
	return fmt.Errorf("%w on %s: no sensor packets for %v: is a program controlling the robot, and is this "+
		"the interface the board's cable is plugged into?", ErrNoAnswer, s.cfg.Interface, s.cfg.InitTimeout)
}

// start begins the accounting of a session: the board restarts sensor_index and packet_loss for
// each, so the first packet is compared with nothing of the session before.
func (s *Session) start(p phase, connected uint8) {
	s.phase, s.connected, s.sawAck = p, connected, false
	s.lastValid = s.now()
	s.stats.session = s.id
	s.stats.resetSequence()
}

// errSkip marks a frame read that carried nothing for us (already counted).
var errSkip = errors.New("host: frame skipped")

// read reads one frame and returns its payload, or errSkip for frames that are not v4 payloads.
func (s *Session) read() (proto.Kind, []byte, error) {
	n, err := s.conn.ReadFrame(s.rx[:])
	switch {
	case errors.Is(err, link.ErrShortBuffer):
		s.stats.malformed++
		return proto.KindUnknown, nil, errSkip
	case err != nil && !errors.Is(err, link.ErrTimeout):
		return proto.KindUnknown, nil, fmt.Errorf("host: read from %s: %w", s.cfg.Interface, err)
	case err != nil:
		return proto.KindUnknown, nil, err
	}
	kind, p, err := proto.ParsePayload(s.rx[:n])
	if err != nil {
		s.stats.malformed++
		if errors.Is(err, proto.ErrProtocolV3) {
			return kind, nil, err
		}
		return kind, nil, errSkip
	}
	return kind, p, nil
}

// Send stamps cmd with the session id and the next command_index (it sets cmd.SessionID and
// cmd.Index), encodes it and sends it. A command holding NaN or Inf is refused (proto.ErrNotFinite)
// and uses no index. Fields that had to be saturated are logged when the set of them changes.
func (s *Session) Send(cmd *proto.Command) error {
	switch s.phase {
	case idle:
		return ErrNotConnected
	case listening:
		return ErrListener
	}
	cmd.SessionID, cmd.Index = s.id, s.nextIndex
	sat, err := cmd.Marshal(proto.PayloadBuffer(s.tx[:], proto.CommandLen))
	if err != nil {
		return fmt.Errorf("host: command %d not sent: %w", cmd.Index, err)
	}
	s.noteSaturation(sat)
	n, err := proto.PutHeader(s.tx[:], s.cfg.MAC, proto.CommandLen)
	if err != nil {
		return err
	}
	at := s.now()
	if err := s.conn.WriteFrame(s.tx[:n]); err != nil {
		return fmt.Errorf("host: send command on %s: %w", s.cfg.Interface, err)
	}
	s.sendTimes[cmd.Index%sendRingSize] = sendRecord{index: cmd.Index, valid: true, at: at}
	s.nextIndex++
	s.stats.commandsSent++
	return nil
}

func (s *Session) noteSaturation(sat proto.Saturation) {
	if sat != 0 {
		s.stats.saturated++
	}
	if sat == s.lastSat {
		return
	}
	if sat != 0 {
		s.log.Warn("command fields saturated to the wire's fixed-point range (the board gets less than asked)",
			"fields", sat.String(), "max_kp_A_per_rad", proto.MaxKp, "max_kd_As_per_rad", proto.MaxKd, "max_isat_A", proto.MaxISat)
	} else {
		s.log.Info("commands no longer saturated")
	}
	s.lastSat = sat
}

// LastSensorPayload is the raw payload of the packet the last successful Receive decoded, for a
// flight recorder: replaying the bytes reproduces the decoded values exactly. It is valid until
// the next Receive.
func (s *Session) LastSensorPayload() []byte { return s.lastSensor }

// LastCommandPayload is the raw payload the last successful Send put on the wire; valid until the
// next Send.
func (s *Session) LastCommandPayload() []byte {
	if s.stats.commandsSent == 0 {
		return nil
	}
	return proto.PayloadBuffer(s.tx[:], proto.CommandLen)
}

// Receive waits for the next sensor packet of our session and decodes it into out. Packets of
// other sessions are counted and dropped (a listener follows a new session instead, see Listen).
// Errors: ErrSensorTimeout (wrapped) when none arrived within the sensor timeout;
// ErrCommandsIgnored (wrapped, out holds the packet) when the board stopped taking our commands.
func (s *Session) Receive(out *proto.Sensor) error {
	if s.phase == idle {
		return ErrNotConnected
	}
	if err := s.conn.SetReadTimeout(s.cfg.SensorTimeout / 5); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	// Every pass reads at least one frame before it looks at the clock: a caller that polls with
	// a short timeout must still drain what arrived, or a silence would never end.
	for ; ; s.lastPass = s.now() {
		if s.lastPass-s.lastValid > s.cfg.SensorTimeout {
			s.lastPass = s.lastValid
			return fmt.Errorf("%w: no valid sensor packet for %v on %s (the board may have lost the link, "+
				"been reset, or be talking to another session)", ErrSensorTimeout, (s.now() - s.lastValid).Round(time.Millisecond), s.cfg.Interface)
		}
		kind, p, err := s.read()
		switch {
		case errors.Is(err, link.ErrTimeout) || errors.Is(err, errSkip) || errors.Is(err, proto.ErrProtocolV3):
			continue
		case err != nil:
			return err
		}
		if kind == proto.KindAck {
			// Acks until the board has seen our first command. A listener learns from them that
			// the board is starting a session, and so restarting its counters, even when the new
			// session repeats the old id.
			s.sawAck = s.phase == listening
			continue
		}
		if kind != proto.KindSensor {
			continue
		}
		switch theirs := binary.LittleEndian.Uint16(p); {
		case s.phase == listening && (theirs != s.id || s.sawAck):
			s.log.Info("listener follows a new session", "interface", s.cfg.Interface, "old", s.id, "new", theirs)
			s.id = theirs
			s.start(listening, s.connected)
		case theirs != s.id:
			s.stats.foreign++
			continue
		}
		_ = out.Unmarshal(p) // the length was checked by ParsePayload
		s.lastSensor = p
		now := s.now()
		s.lastValid = now
		s.account(out, now)
		return s.checkAcknowledged(out, now)
	}
}

// checkAcknowledged returns ErrCommandsIgnored when the command after the last one the board
// acknowledged was sent more than the sensor timeout ago.
func (s *Session) checkAcknowledged(in *proto.Sensor, now time.Duration) error {
	next := in.LastCmdIndex + 1
	rec := &s.sendTimes[next%sendRingSize]
	if s.phase != controlling || !rec.valid || rec.index != next || now-rec.at <= s.cfg.SensorTimeout {
		return nil
	}
	return fmt.Errorf("%w: command %d sent %v ago on %s is not acknowledged (last_cmd_index %d): the board's "+
		"watchdog has probably disabled the motors after a gap in our commands; connect a new session",
		ErrCommandsIgnored, next, (now - rec.at).Round(time.Millisecond), s.cfg.Interface, in.LastCmdIndex)
}

// account updates the statistics with one valid sensor packet received at now.
func (s *Session) account(in *proto.Sensor, now time.Duration) {
	c := &s.stats
	c.sensorsReceived++
	if c.haveSequence {
		if gap := in.SensorIndex - c.prevSensorIndex - 1; gap != 0 {
			c.sensorLoss += uint64(gap)
			c.sensorBursts[burstBucket(gap)]++
		}
		if lost := in.PacketLoss - c.prevPacketLoss; lost != 0 {
			c.commandLoss += uint64(lost)
			c.commandBursts[burstBucket(lost)]++
		}
	} else {
		c.commandLoss += uint64(in.PacketLoss)
	}
	newCommand := !c.haveSequence || in.LastCmdIndex != c.prevLastCmd
	c.haveSequence = true
	c.prevSensorIndex, c.prevPacketLoss, c.prevLastCmd = in.SensorIndex, in.PacketLoss, in.LastCmdIndex
	if !newCommand {
		return
	}
	rec := &s.sendTimes[in.LastCmdIndex%sendRingSize]
	if rec.valid && rec.index == in.LastCmdIndex {
		c.latency.Add(now - rec.at)
		rec.valid = false
	}
}

// counters are the raw statistics; Stats summarises them.
type counters struct {
	session                                      uint16
	commandsSent, sensorsReceived                uint64
	commandLoss, sensorLoss, foreign, malformed  uint64
	saturated                                    uint64
	sensorBursts, commandBursts                  [BurstBuckets]uint64
	latency                                      clock.Histogram
	haveSequence                                 bool
	prevSensorIndex, prevPacketLoss, prevLastCmd uint16
}

// resetSequence forgets the previous packet's counters: a new session restarts them.
func (c *counters) resetSequence() { c.haveSequence = false }
