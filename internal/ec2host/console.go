package ec2host

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"golang.org/x/crypto/ssh"
)

// NoConsoleHostKeysError is HostKeysFromConsole's error when the console
// printed no host keys in time, as opposed to EC2 failing.
type NoConsoleHostKeysError struct {
	ID     string
	Within time.Duration
	Seen   string // what the console did show
}

func (e *NoConsoleHostKeysError) Error() string {
	return fmt.Sprintf("the console of instance %s showed no SSH host keys within %s: %s", e.ID, roundWait(e.Within), e.Seen)
}

// HostKeysFromConsole reads the instance's console output (EC2's copy of
// its serial console, which only the instance itself writes) until
// cloud-init's SSH host key blocks appear, and returns the SHA256
// fingerprints they name. This is how a new instance's host key can be
// known before the first SSH contact. It polls at the client's poll
// interval for at most within; EC2 fills the console a few minutes after
// boot.
func (c *Client) HostKeysFromConsole(ctx context.Context, id string, within time.Duration) ([]string, error) {
	start := time.Now()
	seen := "the console stayed empty"
	for {
		out, err := c.ec2.GetConsoleOutput(ctx, &ec2.GetConsoleOutputInput{InstanceId: aws.String(id)})
		switch {
		case err != nil && errorCode(err) == "InvalidInstanceID.NotFound" && time.Since(start) < c.notFoundGrace:
			// Eventually consistent, as in WaitRunning.
		case err != nil && ctx.Err() == nil:
			return nil, fmt.Errorf("read the console of %s: %w", id, err)
		case err != nil:
		default:
			text, derr := base64.StdEncoding.DecodeString(aws.ToString(out.Output))
			if derr != nil {
				return nil, fmt.Errorf("read the console of %s: output is not base64: %w", id, derr)
			}
			if fps := parseConsoleHostKeys(string(text)); len(fps) > 0 {
				return fps, nil
			}
			if len(text) > 0 {
				seen = "the boot log has no -----BEGIN SSH HOST KEY FINGERPRINTS----- block (cloud-init prints it at boot " +
					"unless the image has no cloud-init or sets ssh.emit_keys_to_console to false)"
			}
		}
		left := within - time.Since(start)
		if left <= 0 {
			return nil, &NoConsoleHostKeysError{ID: id, Within: within, Seen: seen}
		}
		if err := sleep(ctx, min(c.poll, left)); err != nil {
			return nil, fmt.Errorf("read the console of %s: %s after %s: %w", id, seen, roundWait(time.Since(start)), err)
		}
	}
}

const (
	fpBegin   = "-----BEGIN SSH HOST KEY FINGERPRINTS-----"
	fpEnd     = "-----END SSH HOST KEY FINGERPRINTS-----"
	keysBegin = "-----BEGIN SSH HOST KEY KEYS-----"
	keysEnd   = "-----END SSH HOST KEY KEYS-----"
)

// sha256FP matches a fingerprint as ssh-keygen -l prints it.
var sha256FP = regexp.MustCompile(`SHA256:[A-Za-z0-9+/]{43}`)

// parseConsoleHostKeys returns the SHA256 fingerprints in the last
// complete fingerprint block and of the keys in the last complete keys
// block of a boot log (the last boot is the one whose sshd runs), without
// duplicates. cloud-init prints the blocks through logger, so each line
// may carry a prefix ("ec2: ", "<14>Dec  4 17:00:01 ec2: "); old
// ssh-keygen MD5 fingerprints are ignored, the keys block still counts.
func parseConsoleHostKeys(text string) []string {
	var lastFPs, lastKeys, cur []string
	block := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.Contains(line, fpBegin):
			block, cur = fpBegin, nil
		case strings.Contains(line, keysBegin):
			block, cur = keysBegin, nil
		case strings.Contains(line, fpEnd) && block == fpBegin:
			block, lastFPs = "", cur
		case strings.Contains(line, keysEnd) && block == keysBegin:
			block, lastKeys = "", cur
		case block == fpBegin:
			if fp := sha256FP.FindString(line); fp != "" {
				cur = append(cur, fp)
			}
		case block == keysBegin:
			if fp := keyFingerprint(line); fp != "" {
				cur = append(cur, fp)
			}
		}
	}
	var out []string
	for _, fp := range append(lastFPs, lastKeys...) {
		if !slices.Contains(out, fp) {
			out = append(out, fp)
		}
	}
	return out
}

// keyFingerprint finds "<type> <base64>" in a keys-block line, after any
// logger prefix, and returns the key's fingerprint ("" if none parses).
func keyFingerprint(line string) string {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if !strings.HasPrefix(f[i+1], "AAAA") {
			continue
		}
		if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f[i] + " " + f[i+1])); err == nil {
			return ssh.FingerprintSHA256(k)
		}
	}
	return ""
}
