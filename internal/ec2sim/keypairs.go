package ec2sim

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"
)

// keyPair is an imported key; line is the authorized_keys line that
// instances launched with it admit.
type keyPair struct {
	id, name, fingerprint, line string
}

func (s *Server) importKeyPair(f url.Values, reqID string) (any, *apiError) {
	name := f.Get("KeyName")
	if name == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter KeyName")
	}
	// The SDK base64-encodes the PublicKeyMaterial blob on the wire.
	raw, err := base64.StdEncoding.DecodeString(f.Get("PublicKeyMaterial"))
	if err != nil {
		return nil, errf(400, "InvalidKey.Format", "Key is not in valid OpenSSH public key format")
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey(raw)
	if err != nil {
		return nil, errf(400, "InvalidKey.Format", "Key is not in valid OpenSSH public key format")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[name]; ok {
		return nil, errf(400, "InvalidKeyPair.Duplicate", "The keypair already exists")
	}
	if dryRun(f) {
		return nil, errDryRun()
	}
	kp := keyPair{name: name, line: strings.TrimSpace(string(raw)), fingerprint: ssh.FingerprintSHA256(pk)}
	kp.id = s.newIDLocked("key", 0x0ce0000000000000)
	s.keys[name] = kp
	return importKeyPairResponse{Xmlns: xmlns, RequestID: reqID, KeyFingerprint: kp.fingerprint, KeyName: name, KeyPairID: kp.id}, nil
}

func (s *Server) deleteKeyPair(f url.Values, reqID string) (any, *apiError) {
	name, id := f.Get("KeyName"), f.Get("KeyPairId")
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone string
	for n, kp := range s.keys {
		if (name != "" && n == name) || (id != "" && kp.id == id) {
			gone = kp.id
			delete(s.keys, n)
		}
	}
	// EC2 answers true for a key pair that does not exist.
	resp := returned("DeleteKeyPair", reqID)
	resp.KeyPairID = gone
	return resp, nil
}

// KeyPairs lists the names of the imported key pairs.
func (s *Server) KeyPairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.keys {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
