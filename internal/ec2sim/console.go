package ec2sim

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// consoleKeys is what an instance's boot log says about its SSH host
// keys: nothing (silent), or the authorized_keys line of the key
// cloud-init printed, which is the sshd's own unless forged.
type consoleKeys struct {
	silent  bool
	keyLine string
}

// consoleKeysFor decides, at launch, what the console of an instance on
// host h will print, consuming one ConsoleSilent or ConsoleForgery fault.
func (s *Server) consoleKeysFor(h *testhost.Host) consoleKeys {
	s.mu.Lock()
	silent := s.consoleSilent > 0
	if silent {
		s.consoleSilent--
	}
	forged := !silent && s.consoleForged > 0
	if forged {
		s.consoleForged--
	}
	s.mu.Unlock()
	switch {
	case silent:
		return consoleKeys{silent: true}
	case forged:
		return consoleKeys{keyLine: newKeyLine()}
	}
	return consoleKeys{keyLine: h.HostKeyLine}
}

// newKeyLine is a fresh ed25519 public key that no sshd holds.
func newKeyLine() string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("ec2sim: generate a forged host key: %v", err))
	}
	pk, err := ssh.NewPublicKey(pub)
	if err != nil {
		panic(fmt.Sprintf("ec2sim: encode a forged host key: %v", err))
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
}

type getConsoleOutputResponse struct {
	XMLName    xml.Name `xml:"GetConsoleOutputResponse"`
	Xmlns      string   `xml:"xmlns,attr"`
	RequestID  string   `xml:"requestId"`
	InstanceID string   `xml:"instanceId"`
	Timestamp  string   `xml:"timestamp,omitempty"`
	Output     string   `xml:"output,omitempty"`
}

// getConsoleOutput answers as EC2 does: nothing for a while after the
// instance runs (EC2 snapshots the serial console now and then; Latest
// asks a Nitro instance for what it printed so far), then the boot log,
// base64-encoded. Only an instance that ran has a console.
func (s *Server) getConsoleOutput(f url.Values, reqID string) (any, *apiError) {
	id := f.Get("InstanceId")
	if id == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	latest := false
	switch v := f.Get("Latest"); v {
	case "", "false":
	case "true":
		latest = true
	default:
		return nil, errf(400, "InvalidParameterValue", "Value (%s) for parameter latest is invalid. Expected: 'true' or 'false'.", v)
	}
	if !strings.HasPrefix(id, "i-") {
		return nil, errf(400, "InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
	}
	if dryRun(f) {
		// IAM allowed it (server.go checks Deny first); the instance
		// is not looked up.
		return nil, errDryRun()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instances[id]
	if !ok || !s.visibleLocked(in) {
		return nil, errf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	}
	resp := getConsoleOutputResponse{Xmlns: xmlns, RequestID: reqID, InstanceID: id}
	ready := in.launched.Add(s.opts.PendingDelay)
	if !latest {
		ready = ready.Add(s.opts.ConsoleDelay)
	}
	if (in.stateReason != nil && in.stateReason.Code == "Server.InternalError") || in.host == nil || time.Now().Before(ready) {
		// Booted never (a failed launch) or not yet.
		return resp, nil
	}
	resp.Timestamp = ready.UTC().Format("2006-01-02T15:04:05.000Z")
	resp.Output = base64.StdEncoding.EncodeToString([]byte(bootLog(in, ready)))
	return resp, nil
}

// hostnameOf is the name cloud-init gives an instance: ip-a-b-c-d.
func hostnameOf(in *instance) string {
	return "ip-" + strings.ReplaceAll(in.host.Addr, ".", "-")
}

// bootLog is the serial console of a Debian cloud image up to the login
// prompt: kernel lines, cloud-init's stages, and, unless the console is
// silent, the two blocks cloud-init's write-ssh-key-fingerprints prints
// (the fingerprints through logger -t ec2, the keys as they are). Lines
// end in CRLF, as a serial console's do.
func bootLog(in *instance, at time.Time) string {
	host := hostnameOf(in)
	stamp := at.UTC().Format("Mon, 02 Jan 2006 15:04:05 +0000")
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\r\n", args...) }
	line("[    0.000000] Linux version 6.1.0-28-cloud-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)")
	line("[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-cloud-amd64 root=PARTUUID=4e0b5ab8-2a3f-4c36-8f4b-1c9dbd5e6a01 ro console=tty0 console=ttyS0,115200 earlyprintk=ttyS0,115200 consoleblank=0")
	line("[    0.000000] DMI: Amazon EC2 %s/, BIOS 1.0 10/16/2017", in.typ)
	line("[    0.412345] Run /sbin/init as init process")
	line("[    1.203311] systemd[1]: systemd 252.31-1~deb12u1 running in system mode (+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY +P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified)")
	line("[    1.210442] systemd[1]: Detected virtualization amazon.")
	line("[    4.118220] cloud-init[412]: Cloud-init v. 22.4.2 running 'init-local' at %s. Up 4.02 seconds.", stamp)
	line("[    5.804117] cloud-init[455]: Cloud-init v. 22.4.2 running 'init' at %s. Up 5.71 seconds.", stamp)
	line("[    5.811903] cloud-init[455]: ci-info: ++++++++++++++++++++++++++++++++++++++Net device info++++++++++++++++++++++++++++++++++++++")
	line("[    5.812377] cloud-init[455]: ci-info: |  ens5  | True |  %s  | 255.255.255.0 | global | 0a:1b:2c:3d:4e:5f |", in.host.Addr)
	line("[    6.930581] cloud-init[455]: Generating public/private ed25519 key pair.")
	line("[    6.931022] cloud-init[455]: Your identification has been saved in /etc/ssh/ssh_host_ed25519_key")
	line("[    6.931360] cloud-init[455]: Your public key has been saved in /etc/ssh/ssh_host_ed25519_key.pub")
	line("[    8.402976] cloud-init[521]: Cloud-init v. 22.4.2 running 'modules:config' at %s. Up 8.31 seconds.", stamp)
	if !in.console.silent {
		pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(in.console.keyLine))
		if err == nil {
			line("ec2: ")
			line("ec2: #############################################################")
			line("ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----")
			line("ec2: 256 %s root@%s (ED25519)", ssh.FingerprintSHA256(pk), host)
			line("ec2: -----END SSH HOST KEY FINGERPRINTS-----")
			line("ec2: #############################################################")
			line("-----BEGIN SSH HOST KEY KEYS-----")
			line("%s root@%s", strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk))), host)
			line("-----END SSH HOST KEY KEYS-----")
		}
	}
	line("[    9.117452] cloud-init[540]: Cloud-init v. 22.4.2 running 'modules:final' at %s. Up 9.02 seconds.", stamp)
	line("[    9.208115] cloud-init[540]: Cloud-init v. 22.4.2 finished at %s. Datasource DataSourceEc2Local.  Up 9.19 seconds", stamp)
	line("")
	line("Debian GNU/Linux 12 %s ttyS0", host)
	line("")
	line("%s login: ", host)
	return b.String()
}
