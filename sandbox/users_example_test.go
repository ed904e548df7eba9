package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func ExampleSandbox_CreateUser() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	alice, err := sb.CreateUser(ctx, "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(alice.Name(), alice.Home())
	_, err = sb.CreateUser(ctx, "alice")
	fmt.Println(errors.Is(err, sandbox.ErrUserExists))
	_, err = sb.CreateUser(ctx, "Not A Name")
	fmt.Println(errors.Is(err, sandbox.ErrInvalidInput))
	// Output:
	// alice /home/alice
	// true
	// true
}

func ExampleSandbox_AsUser() {
	sb, _, stop := exampleSandbox()
	defer stop()
	root, err := sb.AsUser("root")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(root.Home())
	// Output: /root
}

func ExampleUser_Command_output() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	bob, err := sb.CreateUser(ctx, "bob")
	if err != nil {
		log.Fatal(err)
	}
	out, err := bob.Command("whoami").Output(ctx)
	fmt.Printf("%q %v\n", out, err)
	// Output: "bob\n" <nil>
}

func ExampleSandbox_CreateGroup() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	devs, err := sb.CreateGroup(ctx, "devs")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(devs.Name, devs.SharedDir)
	_, err = sb.CreateGroup(ctx, "devs")
	fmt.Println(errors.Is(err, sandbox.ErrGroupExists))
	// Output:
	// devs /shared/devs
	// true
}

func ExampleUser_AddToGroup() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	carol, err := sb.CreateUser(ctx, "carol")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sb.CreateGroup(ctx, "ops"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(carol.AddToGroup(ctx, "ops"))
	nobody, err := sb.AsUser("nobody-here")
	if err != nil {
		log.Fatal(err)
	}
	err = nobody.AddToGroup(ctx, "ops")
	fmt.Println(errors.Is(err, sandbox.ErrNoSuchUser))
	// Output:
	// <nil>
	// true
}

func ExampleUser_RemoveFromGroup() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	dave, err := sb.CreateUser(ctx, "dave")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sb.CreateGroup(ctx, "ops"); err != nil {
		log.Fatal(err)
	}
	if err := dave.AddToGroup(ctx, "ops"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(dave.RemoveFromGroup(ctx, "ops"))
	// Output: <nil>
}

func ExampleClient_GetOrCreateDrive() {
	_, client, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	d, err := client.GetOrCreateDrive(ctx, "cache", sandbox.DriveParams{MaxSize: 1 << 30})
	if err != nil {
		log.Fatal(err)
	}
	// On hosted Vercel, mount it: the local server keeps drives as records
	// and refuses mounts.
	params := sandbox.CreateParams{Mounts: map[string]sandbox.Mount{"/mnt/cache": d.Mount()}}
	fmt.Println(d.Name, d.MaxSize, params.Mounts["/mnt/cache"].Mode)
	// Output: cache 1073741824 read-write
}

func ExampleClient_GetDrive() {
	_, client, stop := exampleSandbox()
	defer stop()
	_, err := client.GetDrive(context.Background(), "missing")
	fmt.Println(errors.Is(err, sandbox.ErrNotFound))
	// Output: true
}

func ExampleClient_ListDrives() {
	_, client, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	for _, name := range []string{"logs", "cache"} {
		if _, err := client.GetOrCreateDrive(ctx, name, sandbox.DriveParams{}); err != nil {
			log.Fatal(err)
		}
	}
	for d, err := range client.ListDrives(ctx, sandbox.DriveListParams{SortBy: "name", Ascending: true}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.Name)
	}
	// Output:
	// cache
	// logs
}

func ExampleClient_DeleteDrive() {
	_, client, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	if _, err := client.GetOrCreateDrive(ctx, "scratch", sandbox.DriveParams{}); err != nil {
		log.Fatal(err)
	}
	d, err := client.DeleteDrive(ctx, "scratch")
	fmt.Println(d.Name, err)
	// Output: scratch <nil>
}

func ExampleDrive_SnapshotMount() {
	d := sandbox.Drive{Name: "datasets"}
	fmt.Println(d.SnapshotMount())
	// Output: {datasets snapshot}
}

func ExampleClient_SnapshotTree() {
	sb, client, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	var ids []string
	for range 2 {
		snap, err := sb.Snapshot(ctx, sandbox.SnapshotParams{})
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, snap.ID)
		if _, err := sb.Resume(ctx); err != nil {
			log.Fatal(err)
		}
	}
	tree, err := client.SnapshotTree(ctx, ids[1], sandbox.SnapshotTreeParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tree.Anchor.Snapshot.ID == ids[1], len(tree.Lineage), tree.Lineage[0].Snapshot.ID == ids[0])
	// Output: true 1 true
}

func ExampleFileSystem_WriteFiles_user() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	erin, err := sb.CreateUser(ctx, "erin")
	if err != nil {
		log.Fatal(err)
	}
	// A relative path is relative to the user's home; the file becomes
	// the user's.
	if err := erin.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("notes/todo.txt", []byte("ship it\n"))}, files.WriteParams{}); err != nil {
		log.Fatal(err)
	}
	data, err := sb.FS().ReadFile(ctx, "/home/erin/notes/todo.txt")
	fmt.Printf("%q %v\n", data, err)
	// Output: "ship it\n" <nil>
}

func ExampleFileSystem_ReadFile_user() {
	script := sandboxtest.NewScript()
	sandboxtest.NewAccounts().Install(script)
	// Played by the script here; a real sandbox runs base64 as the user.
	script.Handle(sandboxtest.MatchName("base64"), sandboxtest.Reply{Stdout: "c2VjcmV0\n"})
	client, stop := fake(script)
	defer stop()
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	frank, err := sb.CreateUser(ctx, "frank")
	if err != nil {
		log.Fatal(err)
	}
	data, err := frank.FS().ReadFile(ctx, "private.txt")
	fmt.Printf("%q %v\n", data, err)
	// Output: "secret" <nil>
}

func ExampleUser_Command_start() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	u, err := sb.CreateUser(ctx, "heidi")
	if err != nil {
		log.Fatal(err)
	}
	h, err := u.Command("whoami").Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	res, err := h.Wait(ctx)
	fmt.Println(res.ExitCode(), err)
	// Output: 0 <nil>
}

func ExampleFileSystem_Stat_user() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	u, err := sb.CreateUser(ctx, "ivan")
	if err != nil {
		log.Fatal(err)
	}
	if err := u.FS().WriteFile(ctx, "hello.txt", []byte("hi"), 0o644); err != nil {
		log.Fatal(err)
	}
	fi, err := u.FS().Stat(ctx, "hello.txt") // relative to /home/ivan
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fi.Name(), fi.Size())
	// Output: hello.txt 2
}

func ExampleUser_Command() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	u, err := sb.CreateUser(ctx, "judy")
	if err != nil {
		log.Fatal(err)
	}
	// Env survives the switch of user; Dir defaults to the home directory.
	cmd := u.Command("sh", "-c", `printf "%s" "$GREETING"`)
	cmd.Env = map[string]string{"GREETING": "hi from judy"}
	res, err := cmd.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", res.Stdout)
	// Output: hi from judy
}
