package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
)

// TLSFiles configure TLS to an external broker. With none set, an ssl://
// broker is checked against the system's roots.
type TLSFiles struct {
	CAFile     string // PEM roots the broker's certificate must chain to
	CertFile   string // optional PEM client certificate ...
	KeyFile    string // ... and its key
	ServerName string // optional: the name to verify instead of the URL's host
}

func (f TLSFiles) set() bool {
	return f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" || f.ServerName != ""
}

// brokerTLS checks a broker URL (tcp://host:port or ssl://host:port) and
// returns the TLS configuration it needs, nil for tcp.
func brokerTLS(broker string, files TLSFiles) (*tls.Config, error) {
	u, err := url.Parse(broker)
	if err != nil {
		return nil, fmt.Errorf("%w: broker URL: %w", ErrConfig, err)
	}
	if u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%w: broker URL %q must be tcp://host:port or ssl://host:port", ErrConfig, broker)
	}
	switch u.Scheme {
	case "tcp":
		if files.set() {
			return nil, fmt.Errorf("%w: TLS files given for a plain tcp:// broker; use ssl://", ErrConfig)
		}
		return nil, nil
	case "ssl":
	default:
		return nil, fmt.Errorf("%w: broker URL scheme %q is not tcp or ssl", ErrConfig, u.Scheme)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: files.ServerName}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	if files.CAFile != "" {
		pem, err := os.ReadFile(files.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrConfig, files.CAFile)
		}
	}
	if (files.CertFile == "") != (files.KeyFile == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both CertFile and KeyFile", ErrConfig)
	}
	if files.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate: %w", ErrConfig, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
