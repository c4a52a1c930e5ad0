package mqtt

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// DefaultBrokerAddress keeps the embedded broker to the robot's own computer.
const DefaultBrokerAddress = "127.0.0.1:1883"

// BrokerConfig configures the embedded broker.
type BrokerConfig struct {
	RobotID string
	// Address to listen on, host:port; DefaultBrokerAddress when empty. The
	// broker refuses a non-loopback address without a PasswordFile.
	Address string
	// PasswordFile lists the operators' accounts in mosquitto_passwd
	// format. Without it anyone who can reach the loopback address may
	// connect.
	PasswordFile string
	// TLSCertFile and TLSKeyFile, when set, make the listener speak TLS
	// (clients then use ssl://).
	TLSCertFile, TLSKeyFile string
	Logger                  *slog.Logger
}

// Broker is the embedded MQTT broker (mochi-mqtt) a lone robot runs so that
// it works with no other infrastructure. Besides the operators of the
// password file it admits one more account: the robot itself, with a random
// password made at start (RobotCredentials), which is the only account
// allowed to publish the robot's state, telemetry and events.
type Broker struct {
	server *mochi.Server
	url    string
	robot  Credentials
}

// StartBroker starts the embedded broker.
func StartBroker(cfg BrokerConfig) (*Broker, error) {
	topics, err := NewTopics(cfg.RobotID)
	if err != nil {
		return nil, err
	}
	if cfg.Address == "" {
		cfg.Address = DefaultBrokerAddress
	}
	host, _, err := net.SplitHostPort(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("%w: broker address: %w", ErrConfig, err)
	}
	auth := &brokerAuth{topics: topics}
	if cfg.PasswordFile != "" {
		if auth.users, err = LoadPasswordFile(cfg.PasswordFile); err != nil {
			return nil, err
		}
		if auth.users.Has(cfg.RobotID) {
			return nil, fmt.Errorf("%w: password file %s lists the robot's own account %q", ErrCredentials, cfg.PasswordFile, cfg.RobotID)
		}
	}
	if !isLoopback(host) && (auth.users == nil || auth.users.Len() == 0) {
		return nil, fmt.Errorf("%w: %s", ErrInsecureBind, cfg.Address)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails
	auth.robot = Credentials{Username: cfg.RobotID, Password: hex.EncodeToString(secret)}

	lc := listeners.Config{Type: listeners.TypeTCP, ID: "solo", Address: cfg.Address}
	scheme := "tcp"
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: broker certificate: %w", ErrConfig, err)
		}
		lc.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		scheme = "ssl"
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = 256 << 10
	caps.MaximumSessionExpiryInterval = 3600
	server := mochi.New(&mochi.Options{Capabilities: caps, Logger: logger.With("component", "mqtt-broker")})
	if err := server.AddHook(auth, nil); err != nil {
		return nil, fmt.Errorf("broker auth hook: %w", err)
	}
	listener := listeners.NewTCP(lc)
	if err := server.AddListener(listener); err != nil {
		return nil, fmt.Errorf("broker listener: %w", err)
	}
	if err := server.Serve(); err != nil {
		server.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	return &Broker{server: server, url: scheme + "://" + listener.Address(), robot: auth.robot}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the address clients connect to, with the actual port.
func (b *Broker) URL() string { return b.url }

// RobotCredentials is the account the robot's own adapter connects with.
func (b *Broker) RobotCredentials() Credentials { return b.robot }

// Close stops the broker and disconnects every client.
//
// It closes the listeners itself before mochi's Server.Close does: that lists a listener's
// clients under a read lock it takes twice (v2.7.9's Clients.GetByListener calls Len), and a
// clean-session client whose disconnect queues the write lock (Clients.Delete) between the two
// deadlocks it for good. It happened in the runtime/app tests, the runtime's own adapter
// disconnecting as the runtime stopped. Here the clients are listed under one read lock, and
// CloseAll waits for every client's goroutine (and so its Delete) to end; Server.Close then
// finds the listeners closed and lists no clients.
func (b *Broker) Close() error {
	s := b.server
	s.Listeners.CloseAll(func(listener string) {
		for _, cl := range s.Clients.GetAll() {
			if cl.Net.Listener == listener && !cl.Closed() {
				_ = s.DisconnectClient(cl, packets.ErrServerShuttingDown)
			}
		}
	})
	return s.Close()
}

// brokerAuth admits the robot with its secret, and everyone else through the
// password file (or freely when there is none, which StartBroker allows on
// loopback only). Only the robot may publish the robot's own topics.
type brokerAuth struct {
	mochi.HookBase
	topics Topics
	robot  Credentials
	users  *PasswordFile
}

func (h *brokerAuth) ID() string { return "solo-auth" }

func (h *brokerAuth) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

func (h *brokerAuth) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	user := string(pk.Connect.Username)
	if user == h.robot.Username {
		return subtle.ConstantTimeCompare(pk.Connect.Password, []byte(h.robot.Password)) == 1
	}
	if h.users == nil {
		return true
	}
	return h.users.Verify(user, pk.Connect.Password)
}

func (h *brokerAuth) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	if !write || !h.topics.robotOwned(topic) {
		return true
	}
	return string(cl.Properties.Username) == h.robot.Username
}
