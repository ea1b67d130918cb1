package ec2host

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// loginUsers are the accounts the official images of each family give the
// launch key, by image name prefix. The name, not the owner, decides: an
// image copied into one's own account keeps its name and its user.
var loginUsers = []struct{ prefix, user string }{
	{"debian-", "admin"},
	{"ubuntu/images/", "ubuntu"},
	{"ubuntu-", "ubuntu"},
	{"al2023-ami-", "ec2-user"},
	{"amzn2-ami-", "ec2-user"},
	{"amzn-ami-", "ec2-user"},
	{"RHEL-", "ec2-user"},
	{"AlmaLinux OS ", "ec2-user"},
	{"CentOS-Stream-", "ec2-user"},
	{"Rocky-", "rocky"},
	{"Fedora-Cloud-", "fedora"},
	{"suse-sles-", "ec2-user"},
}

// DefaultLoginUser is the account an image's cloud-init gives the launch
// key: admin on Debian, ubuntu on Ubuntu, ec2-user on Amazon Linux and
// RHEL, ...; "" for an image of no known family (a custom image, which
// may well admit root).
func DefaultLoginUser(im Image) string {
	for _, l := range loginUsers {
		if strings.HasPrefix(im.Name, l.prefix) {
			return l.user
		}
	}
	return ""
}

// LoginRefusedError is a login the image answered with cloud-init's
// forced command instead of a shell: the key is right, the user is not.
type LoginRefusedError struct {
	InstanceID, User string
	Said             string // what the server printed
	Suggested        string // the user it names, "" if none
}

func (e *LoginRefusedError) Error() string {
	msg := fmt.Sprintf("instance %s refuses logins as %s: it answered: %s", e.InstanceID, e.User, e.Said)
	if e.Suggested != "" {
		msg += fmt.Sprintf("; set ssh_user = %q (tuning runs through its passwordless sudo)", e.Suggested)
	}
	return msg
}

// SudoError is a non-root login user that cannot become root without a
// password: tuning and packages need root.
type SudoError struct {
	InstanceID, User, Stderr string
}

func (e *SudoError) Error() string {
	return fmt.Sprintf("user %s on instance %s cannot run commands as root without a password (sudo -n: %s); "+
		"log in as a user with passwordless sudo, as the image's default user has", e.User, e.InstanceID, e.Stderr)
}

// checkLogin runs one command as the login user (through sudo when it is
// not root) and tells a refused login and a user without sudo apart from
// a working one, so the caller gets what the server said instead of a
// failed command later on.
func checkLogin(ctx context.Context, ex remote.Executor, instanceID, user string) error {
	res, err := ex.Run(ctx, remote.Command{Args: []string{"id", "-u"}})
	if said, suggested, ok := remote.LoginRefusal(res, err); ok {
		return &LoginRefusedError{InstanceID: instanceID, User: user, Said: said, Suggested: suggested}
	}
	out := strings.TrimSpace(string(res.Stdout))
	if err != nil {
		if _, ok := remote.IsExit(err); ok && user != "root" {
			return &SudoError{InstanceID: instanceID, User: user, Stderr: strings.TrimSpace(string(res.Stderr))}
		}
		return fmt.Errorf("run id -u on instance %s as %s: %w", instanceID, user, err)
	}
	if out != "0" {
		return fmt.Errorf("on instance %s, %s runs commands as uid %q, not as root", instanceID, user, out)
	}
	return nil
}
