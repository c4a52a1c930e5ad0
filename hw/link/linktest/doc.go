// Package linktest gives tests of real sockets a private network: VethPair creates two fresh
// network namespaces joined by a veth pair and removes them when the test ends, and
// Namespace.Do runs code inside one of them. It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)
// and iproute2's ip; without them tests skip with a message that says so.
package linktest
