package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// Timeouts of the endpoint: a scraper that stalls cannot hold connections open, and shutdown
// waits at most shutdownGrace for scrapes in flight.
const (
	readHeaderTimeout = 5 * time.Second
	scrapeTimeout     = 10 * time.Second
	shutdownGrace     = 2 * time.Second
)

// Handler serves the registry in the Prometheus exposition formats; log (slog.Default() when
// nil) gets the errors of gathering.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog:            slogPrintln{log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.registry, // counts its own errors and scrapes in flight
		MaxRequestsInFlight: 4,
		Timeout:             scrapeTimeout,
	})
}

// ListenAndServe listens on addr (host:port) and serves until ctx is done.
func (m *Metrics) ListenAndServe(ctx context.Context, addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return m.Serve(ctx, ln, log)
}

// Serve serves Path on ln until ctx is done, then shuts the server down gracefully and closes
// ln. It returns nil after a shutdown by ctx, the server's error otherwise.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "metrics")
	mux := http.NewServeMux()
	mux.Handle(Path, m.Handler(log))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving metrics", "addr", ln.Addr().String(), "path", Path)
	select {
	case err := <-served:
		return fmt.Errorf("metrics: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// slogPrintln adapts slog to promhttp's error logger.
type slogPrintln struct{ log *slog.Logger }

func (s slogPrintln) Println(v ...any) { s.log.Error(fmt.Sprint(v...)) }
