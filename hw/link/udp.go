package link

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoPeer is returned by the board side of a UDP tunnel asked to write before any host spoke.
var ErrNoPeer = errors.New("link: no peer has sent a frame yet")

// maxDatagram is the largest UDP payload: reading into a buffer this size tells the true length
// of a frame that does not fit the caller's buffer.
const maxDatagram = 65535

// UDP tunnels frames over UDP, one datagram per frame, for runs without CAP_NET_RAW (a simulated
// board on loopback). The board side (ListenUDP) answers whoever spoke to it last; the host side
// (DialUDP) talks to one board address and ignores datagrams from anyone else.
type UDP struct {
	pc *net.UDPConn

	fixedPeer bool // host side: peer never changes
	peerMu    sync.Mutex
	peer      netip.AddrPort // zero until a board side hears its first frame

	readMu  sync.Mutex // guards rbuf and one reader at a time
	rbuf    []byte
	timeout atomic.Int64 // time.Duration

	closed atomic.Bool
}

// ListenUDP opens the board side of a tunnel on addr ("127.0.0.1:0" picks a free port; see Addr).
// Writes go to the address the last frame came from.
func ListenUDP(addr string) (*UDP, error) {
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("link: UDP listen address %q: %w", addr, err)
	}
	pc, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("link: listen UDP on %q: %w", addr, err)
	}
	return newUDP(pc, netip.AddrPort{}), nil
}

// DialUDP opens the host side of a tunnel to the board side listening on addr. The socket is not
// connected, so a board that is not running yet costs nothing but timeouts (no ICMP errors).
func DialUDP(addr string) (*UDP, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("link: UDP board address %q: %w", addr, err)
	}
	board := raddr.AddrPort()
	board = netip.AddrPortFrom(board.Addr().Unmap(), board.Port())
	network := "udp6"
	if board.Addr().Is4() {
		network = "udp4"
	}
	pc, err := net.ListenUDP(network, nil)
	if err != nil {
		return nil, fmt.Errorf("link: open UDP socket towards %q: %w", addr, err)
	}
	return newUDP(pc, board), nil
}

func newUDP(pc *net.UDPConn, peer netip.AddrPort) *UDP {
	return &UDP{pc: pc, peer: peer, fixedPeer: peer.IsValid(), rbuf: make([]byte, maxDatagram)}
}

// Addr is the local address, e.g. the port ListenUDP picked.
func (u *UDP) Addr() netip.AddrPort { return u.pc.LocalAddr().(*net.UDPAddr).AddrPort() }

// WriteFrame sends frame as one datagram to the peer.
func (u *UDP) WriteFrame(frame []byte) error {
	if u.closed.Load() {
		return ErrClosed
	}
	if err := checkFrameLength(frame); err != nil {
		return err
	}
	u.peerMu.Lock()
	peer := u.peer
	u.peerMu.Unlock()
	if !peer.IsValid() {
		return ErrNoPeer
	}
	if _, err := u.pc.WriteToUDPAddrPort(frame, peer); err != nil {
		return u.ioError("write", err)
	}
	return nil
}

// ReadFrame returns the next datagram from the peer (the host side drops datagrams from others).
func (u *UDP) ReadFrame(buf []byte) (int, error) {
	u.readMu.Lock()
	defer u.readMu.Unlock()
	if u.closed.Load() {
		return 0, ErrClosed
	}
	var deadline time.Time
	if d := time.Duration(u.timeout.Load()); d > 0 {
		deadline = time.Now().Add(d)
	}
	if err := u.pc.SetReadDeadline(deadline); err != nil {
		return 0, u.ioError("set deadline", err)
	}
	for {
		n, from, err := u.pc.ReadFromUDPAddrPort(u.rbuf)
		if err != nil {
			return 0, u.ioError("read", err)
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if u.fixedPeer {
			if from != u.peer {
				continue
			}
		} else {
			u.peerMu.Lock()
			u.peer = from
			u.peerMu.Unlock()
		}
		if n > len(buf) {
			return 0, shortBufferError(n, len(buf))
		}
		return copy(buf, u.rbuf[:n]), nil
	}
}

// SetReadTimeout sets how long ReadFrame waits for a frame; zero waits forever.
func (u *UDP) SetReadTimeout(d time.Duration) error {
	if u.closed.Load() {
		return ErrClosed
	}
	if err := checkTimeout(d); err != nil {
		return err
	}
	u.timeout.Store(int64(d))
	return nil
}

// Close closes the socket at once, waking a blocked ReadFrame with ErrClosed.
func (u *UDP) Close() error {
	if u.closed.Swap(true) {
		return ErrClosed
	}
	if err := u.pc.Close(); err != nil {
		return fmt.Errorf("link: close UDP socket: %w", err)
	}
	return nil
}

func (u *UDP) ioError(op string, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, net.ErrClosed) || u.closed.Load():
		return ErrClosed
	}
	return fmt.Errorf("link: UDP %s: %w", op, err)
}
