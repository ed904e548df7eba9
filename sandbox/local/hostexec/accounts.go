package hostexec

import "slices"

// accountTools change the users and groups of the machine they run on.
// Executor runs commands on the host, so they would change the host's
// accounts: it refuses them (exit 1, with a message), and the user and
// group calls of package sandbox fail cleanly instead. Use an executor
// that gives each sandbox its own /etc (see local.Cmd.EtcDir) to run them.
var accountTools = []string{
	"useradd", "userdel", "usermod", "groupadd", "groupdel", "groupmod",
	"gpasswd", "chpasswd", "chgpasswd", "passwd", "newusers", "adduser", "deluser", "addgroup", "delgroup",
}

func refusedAccountTool(name string) bool { return slices.Contains(accountTools, name) }
