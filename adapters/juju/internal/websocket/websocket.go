// Package websocket is the small part of RFC 6455 that Pebble's exec needs:
// the opening handshake on either side of a connection already made (a
// unix socket), and whole text and binary messages. A client masks the
// frames it writes, a server does not; neither compresses, and ping and
// pong frames are skipped.
package websocket

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// The message types, as RFC 6455 numbers their opcodes.
const (
	Text   = 1
	Binary = 2
	Close  = 8
	ping   = 9
	pong   = 10
)

// maxMessage bounds a message read, so that a broken peer cannot make the
// reader allocate without end.
const maxMessage = 64 << 20

// acceptGUID is the constant RFC 6455 appends to the client's key.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Conn is one websocket connection. Reads and writes may run at the same
// time; two writes may too.
type Conn struct {
	conn   net.Conn
	r      *bufio.Reader
	client bool // whether writes are masked
	wmu    sync.Mutex
}

// Accept computes the Sec-WebSocket-Accept value for a client's key.
func Accept(key string) string {
	h := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// Dial performs the client's handshake for path on conn, which it owns
// from then on.
func Dial(conn net.Conn, host, path string) (*Conn, error) {
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake for %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		conn.Close()
		return nil, &HandshakeError{Path: path, Status: resp.StatusCode, Body: body}
	}
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != Accept(key) {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake for %s: Sec-WebSocket-Accept %q, want %q", path, got, Accept(key))
	}
	return &Conn{conn: conn, r: r, client: true}, nil
}

// HandshakeError is a refused handshake: the server answered with Status
// and Body instead of switching protocols.
type HandshakeError struct {
	Path   string
	Status int
	Body   []byte
}

// Error names the path, the status and the body.
func (e *HandshakeError) Error() string {
	return fmt.Sprintf("websocket handshake for %s: status %d: %s", e.Path, e.Status, strings.TrimSpace(string(e.Body)))
}

// Upgrade performs the server's handshake on the request w answers, and
// takes over its connection.
func Upgrade(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "websocket: not a websocket handshake", http.StatusBadRequest)
		return nil, errors.New("websocket: not a websocket handshake")
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "websocket: cannot take over the connection", http.StatusInternalServerError)
		return nil, errors.New("websocket: the ResponseWriter is not a Hijacker")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, err
	}
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + Accept(key) + "\r\n\r\n"
	if _, err := io.WriteString(conn, resp); err != nil {
		conn.Close()
		return nil, err
	}
	return &Conn{conn: conn, r: rw.Reader}, nil
}

// Write sends data as one message of type typ (Text, Binary or Close).
func (c *Conn) Write(typ int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	hdr := make([]byte, 0, 14)
	hdr = append(hdr, 0x80|byte(typ))
	mask := byte(0)
	if c.client {
		mask = 0x80
	}
	switch n := len(data); {
	case n < 126:
		hdr = append(hdr, mask|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, mask|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, mask|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	payload := data
	if c.client {
		var key [4]byte
		rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		payload = make([]byte, len(data))
		for i, b := range data {
			payload[i] = b ^ key[i%4]
		}
	}
	if _, err := c.conn.Write(append(hdr, payload...)); err != nil {
		return err
	}
	return nil
}

// Read returns the next text or binary message, joining fragments and
// skipping pings and pongs. A close message is returned as type Close
// with its payload; io.EOF means the connection ended without one.
func (c *Conn) Read() (typ int, data []byte, err error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(c.r, h[:]); err != nil {
			return 0, nil, err
		}
		fin, op, masked := h[0]&0x80 != 0, int(h[0]&0x0f), h[1]&0x80 != 0
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(c.r, b[:]); err != nil {
				return 0, nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(c.r, b[:]); err != nil {
				return 0, nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if n > maxMessage || uint64(len(data))+n > maxMessage {
			return 0, nil, fmt.Errorf("websocket: message larger than %d bytes", maxMessage)
		}
		var key [4]byte
		if masked {
			if _, err := io.ReadFull(c.r, key[:]); err != nil {
				return 0, nil, err
			}
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(c.r, payload); err != nil {
			return 0, nil, err
		}
		if masked {
			for i := range payload {
				payload[i] ^= key[i%4]
			}
		}
		switch op {
		case ping, pong:
			continue
		case 0: // continuation
			if typ == 0 {
				return 0, nil, errors.New("websocket: continuation frame without a first frame")
			}
		default:
			if typ != 0 {
				return 0, nil, fmt.Errorf("websocket: frame of type %d inside a fragmented message", op)
			}
			typ = op
		}
		data = append(data, payload...)
		if fin || typ == Close {
			return typ, data, nil
		}
	}
}

// Close sends a normal close message and closes the connection.
func (c *Conn) Close() error {
	c.Write(Close, []byte{0x03, 0xe8}) // 1000: normal closure
	return c.conn.Close()
}
