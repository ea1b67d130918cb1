// Package resultsdbtest starts a real PostgreSQL server for tests of the
// results database: Debian's postgresql-15 binaries, initdb in a temporary
// directory, listening on a free loopback port.
package resultsdbtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// BinDir is where the PostgreSQL 15 server programs are.
const BinDir = "/usr/lib/postgresql/15/bin"

// Password is in every URL Start returns, so tests can check it never
// shows; the server trusts loopback and ignores it.
const Password = "s3cret-Pa55word"

// Start starts a server for the rest of the test and returns the URL of
// its postgres database. It skips loudly (or fails, see testhost.Skip)
// when the binaries are not installed.
func Start(t testing.TB) string { return StartServer(t).URL }

// Server is a running test server.
type Server struct {
	// URL is the URL of its postgres database, with Password in it.
	URL     string
	cluster *pgctl.Cluster
	remove  func()
}

// StartServer starts a server for the rest of the test.
func StartServer(t testing.TB) *Server {
	t.Helper()
	requireBinaries(t)
	s, err := startServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// Stop stops the server, keeping its data: its port refuses connections
// until Start.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.cluster.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Start starts the stopped server again on the same port.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.cluster.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) close() {
	s.cluster.Stop(context.Background())
	s.remove()
}

// Database returns the URL of a new, empty database on a server shared by
// the tests of the package; the package's TestMain calls Main, which stops
// the server after the tests.
func Database(t testing.TB) string {
	t.Helper()
	requireBinaries(t)
	shared.once.Do(func() { shared.server, shared.err = startServer() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, shared.server.URL)
	if err != nil {
		t.Fatalf("connect to the shared server: %v", err)
	}
	defer conn.Close(ctx)
	shared.mu.Lock()
	shared.n++
	name := fmt.Sprintf("results_%d", shared.n)
	shared.mu.Unlock()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return strings.Replace(shared.server.URL, "/postgres?", "/"+name+"?", 1)
}

var shared struct {
	once   sync.Once
	mu     sync.Mutex
	n      int
	server *Server
	err    error
}

// Main runs the tests and stops the shared server, if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.server != nil {
		shared.server.close()
	}
	return code
}

func requireBinaries(t testing.TB) {
	t.Helper()
	testhost.SkipShort(t, "a PostgreSQL server")
	testhost.RequireCommand(t, "postgres", BinDir)
	testhost.RequireCommand(t, "initdb", BinDir)
}

// startServer initdbs and starts a server on a free loopback port.
func startServer() (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	ctx := context.Background()
	c, cleanup, err := pgctl.Scratch(ctx, BinDir, map[string]string{
		"listen_addresses": "127.0.0.1", "port": fmt.Sprint(port),
		"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "shared_buffers": "128MB",
	})
	if err != nil {
		return nil, fmt.Errorf("scratch cluster: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		cleanup()
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	url := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", Password, port)
	return &Server{URL: url, cluster: c, remove: cleanup}, nil
}

// FreePort returns a loopback TCP port nothing listens on at the moment.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
