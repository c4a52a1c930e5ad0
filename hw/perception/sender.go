package perception

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sender sends datagrams to one UDP destination. Send never waits: a socket that cannot take a
// datagram at once (its buffer full) refuses it, so a sender inside a control loop cannot be held
// up by the network. The socket is not connected, so a receiver that is not running yet costs
// nothing (no ICMP errors on later sends). Not safe for concurrent use.
type Sender struct {
	pc   *net.UDPConn
	raw  syscall.RawConn
	dest netip.AddrPort
	to   unix.Sockaddr
	buf  [Size]byte
	// sendOnce is the one sendto attempt RawConn.Write makes, built once so that Send does not
	// allocate a closure; it leaves its result in sendErr.
	sendOnce func(fd uintptr) bool
	sendErr  error
}

// Dial opens a sender towards addr ("host:port").
func Dial(addr string) (*Sender, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("perception: destination %q: %w", addr, err)
	}
	dest := raddr.AddrPort()
	dest = netip.AddrPortFrom(dest.Addr().Unmap(), dest.Port())
	if !dest.Addr().IsValid() || dest.Addr().IsUnspecified() || dest.Port() == 0 {
		return nil, fmt.Errorf("perception: destination %q: want a host and a port", addr)
	}
	network := "udp6"
	var to unix.Sockaddr = &unix.SockaddrInet6{Port: int(dest.Port()), Addr: dest.Addr().As16()}
	if dest.Addr().Is4() {
		network = "udp4"
		to = &unix.SockaddrInet4{Port: int(dest.Port()), Addr: dest.Addr().As4()}
	}
	pc, err := net.ListenUDP(network, nil)
	if err != nil {
		return nil, fmt.Errorf("perception: open UDP socket towards %q: %w", addr, err)
	}
	raw, err := pc.SyscallConn()
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("perception: UDP socket towards %q: %w", addr, err)
	}
	s := &Sender{pc: pc, raw: raw, dest: dest, to: to}
	s.sendOnce = func(fd uintptr) bool {
		s.sendErr = unix.Sendto(int(fd), s.buf[:], unix.MSG_DONTWAIT, s.to)
		return true
	}
	return s, nil
}

// Destination is where the datagrams go.
func (s *Sender) Destination() netip.AddrPort { return s.dest }

// Send encodes d and sends it as one datagram, or fails at once (unix.EAGAIN, wrapped, when the
// socket's buffer is full). It allocates nothing unless it fails.
func (s *Sender) Send(d *Datagram) error {
	if err := d.Marshal(s.buf[:]); err != nil {
		return err
	}
	err := s.raw.Write(s.sendOnce)
	if err == nil {
		err = s.sendErr
	}
	if err != nil {
		return fmt.Errorf("perception: send to %v: %w", s.dest, err)
	}
	return nil
}

// Close closes the socket.
func (s *Sender) Close() error { return s.pc.Close() }
