package testenv

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// GitSSHServer serves the bare repositories of a GitServer's root over SSH on loopback: a
// real SSH handshake (public-key auth, a pinned host key) in front of the real
// git-upload-pack, so clients are tested as they would talk to a Git host.
type GitSSHServer struct {
	Addr string // 127.0.0.1:PORT
	// ClientKeyPEM is the private key the server accepts (OpenSSH PEM); KnownHosts pins the
	// server's host key for Addr.
	ClientKeyPEM []byte
	KnownHosts   []byte
	HostKey      ssh.PublicKey
	root         string
	ln           net.Listener
}

// StartGitSSHServer serves root over SSH with fresh host and client keys.
func StartGitSSHServer(root string) (*GitSSHServer, error) {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(clientPriv, "test client")
	if err != nil {
		return nil, err
	}
	authorized, err := ssh.NewPublicKey(clientPub)
	if err != nil {
		return nil, err
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(authorized.Marshal()) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &GitSSHServer{Addr: ln.Addr().String(), ClientKeyPEM: pem.EncodeToMemory(block), HostKey: hostSigner.PublicKey(), root: root, ln: ln,
		KnownHosts: []byte(knownhosts.Line([]string{knownhosts.Normalize(ln.Addr().String())}, hostSigner.PublicKey()) + "\n")}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, cfg)
		}
	}()
	return s, nil
}

// URL is the ssh:// URL of repository name (as created by GitServer.NewRepo).
func (s *GitSSHServer) URL(name string) string { return "ssh://git@" + s.Addr + "/" + name + ".git" }

// Stop closes the listener.
func (s *GitSSHServer) Stop() { _ = s.ln.Close() }

func (s *GitSSHServer) serve(c net.Conn, cfg *ssh.ServerConfig) {
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, in, err := nc.Accept()
		if err != nil {
			return
		}
		go s.session(ch, in)
	}
}

// session runs "git-upload-pack '<path>'" (fetches only) with the channel as its stdio.
func (s *GitSSHServer) session(ch ssh.Channel, in <-chan *ssh.Request) {
	defer ch.Close()
	for req := range in {
		if req.Type != "exec" || len(req.Payload) < 4 {
			_ = req.Reply(false, nil)
			continue
		}
		command := string(req.Payload[4:])
		prog, arg, _ := strings.Cut(command, " ")
		if prog != "git-upload-pack" {
			_ = req.Reply(false, nil)
			return
		}
		path := filepath.Join(s.root, filepath.Clean("/"+strings.Trim(arg, "'\"")))
		_ = req.Reply(true, nil)
		cmd := exec.Command("git-upload-pack", path)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, io.Discard
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}
