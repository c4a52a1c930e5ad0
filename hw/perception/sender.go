package perception

import (
	"fmt"
	"net"
	"net/netip"
)

// Sender sends datagrams to one UDP destination. Its socket is not connected, so a receiver
// that is not running yet costs nothing (no ICMP errors on later sends). Not safe for
// concurrent use.
type Sender struct {
	pc   *net.UDPConn
	dest netip.AddrPort
	buf  [Size]byte
}

// Dial opens a sender towards addr ("host:port").
func Dial(addr string) (*Sender, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("perception: destination %q: %w", addr, err)
	}
	dest := raddr.AddrPort()
	dest = netip.AddrPortFrom(dest.Addr().Unmap(), dest.Port())
	network := "udp6"
	if dest.Addr().Is4() {
		network = "udp4"
	}
	pc, err := net.ListenUDP(network, nil)
	if err != nil {
		return nil, fmt.Errorf("perception: open UDP socket towards %q: %w", addr, err)
	}
	return &Sender{pc: pc, dest: dest}, nil
}

// Destination is where the datagrams go.
func (s *Sender) Destination() netip.AddrPort { return s.dest }

// Send encodes d and sends it as one datagram. It does not allocate.
func (s *Sender) Send(d *Datagram) error {
	if err := d.Marshal(s.buf[:]); err != nil {
		return err
	}
	if _, err := s.pc.WriteToUDPAddrPort(s.buf[:], s.dest); err != nil {
		return fmt.Errorf("perception: send to %v: %w", s.dest, err)
	}
	return nil
}

// Close closes the socket.
func (s *Sender) Close() error { return s.pc.Close() }
