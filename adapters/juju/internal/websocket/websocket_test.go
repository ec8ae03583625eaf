package websocket

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// pair returns a client and a server Conn joined by an in-memory pipe.
func pair() (client, server *Conn) {
	a, b := net.Pipe()
	return &Conn{conn: a, r: bufio.NewReader(a), client: true}, &Conn{conn: b, r: bufio.NewReader(b)}
}

// TestMessages sends messages of every length encoding both ways: the
// client masks, the server does not, and each side reads what the other
// wrote.
func TestMessages(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 200000} {
		data := bytes.Repeat([]byte{0xa5, 0x00, 'x'}, n/3+1)[:n]
		for _, dir := range []string{"client to server", "server to client"} {
			c, s := pair()
			from, to := c, s
			if dir == "server to client" {
				from, to = s, c
			}
			go from.Write(Binary, data)
			typ, got, err := to.Read()
			if err != nil || typ != Binary || !bytes.Equal(got, data) {
				t.Errorf("%d bytes %s: got type %d, %d bytes, %v", n, dir, typ, len(got), err)
			}
			c.conn.Close()
			s.conn.Close()
		}
	}
}

// TestFragmentsAndPings: a fragmented message is read whole, and pings
// between its fragments are skipped.
func TestFragmentsAndPings(t *testing.T) {
	c, s := pair()
	go func() {
		c.conn.Write([]byte{0x01, 0x80 | 3, 0, 0, 0, 0, 'a', 'b', 'c'}) // text, not final, zero mask
		c.conn.Write([]byte{0x89, 0x80, 0, 0, 0, 0})                    // ping
		c.conn.Write([]byte{0x80, 0x80 | 2, 1, 1, 1, 1, 'd' ^ 1, 'e' ^ 1})
	}()
	typ, got, err := s.Read()
	if err != nil || typ != Text || string(got) != "abcde" {
		t.Errorf("got %d %q %v, want text \"abcde\"", typ, got, err)
	}
	go c.conn.Write([]byte{0x80, 0}) // a continuation with no first frame
	if _, _, err := s.Read(); err == nil {
		t.Error("a lone continuation frame: got nil, want an error")
	}
}

// TestHandshake upgrades a request over a real connection and exchanges a
// message; a server that refuses gets a HandshakeError naming its reply.
func TestHandshake(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			http.Error(w, "no such task", http.StatusNotFound)
			return
		}
		conn, err := Upgrade(w, r)
		if err != nil {
			return
		}
		typ, data, _ := conn.Read()
		conn.Write(typ, append([]byte("echo: "), data...))
		conn.Close()
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := Dial(nc, addr, "/ws")
	if err != nil {
		t.Fatal(err)
	}
	conn.Write(Text, []byte("hi"))
	if typ, data, err := conn.Read(); err != nil || typ != Text || string(data) != "echo: hi" {
		t.Errorf("got %d %q %v", typ, data, err)
	}
	if typ, _, err := conn.Read(); typ != Close && err != io.EOF {
		t.Errorf("after the server closed: got %d, %v; want a close message", typ, err)
	}
	conn.Close()

	nc, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Dial(nc, addr, "/refuse")
	he, ok := err.(*HandshakeError)
	if !ok || he.Status != http.StatusNotFound || !strings.Contains(err.Error(), "no such task") {
		t.Errorf("a refused handshake: got %v, want a HandshakeError with 404 and the body", err)
	}
}
