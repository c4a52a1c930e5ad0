package mqtt

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		want Credentials
		fail bool
	}{
		{"file", write("ok", "robot:pa:ss\n", 0o600), nil, Credentials{"robot", "pa:ss"}, false},
		{"file wins over environment", write("ok2", "robot:x", 0o400), map[string]string{EnvUsername: "u", EnvPassword: "p"}, Credentials{"robot", "x"}, false},
		{"file readable by others", write("open", "robot:x\n", 0o644), nil, Credentials{}, true},
		{"file without colon", write("nocolon", "robot\n", 0o600), nil, Credentials{}, true},
		{"file with two lines", write("twolines", "robot:x\nother:y\n", 0o600), nil, Credentials{}, true},
		{"file empty password", write("nopass", "robot:\n", 0o600), nil, Credentials{}, true},
		{"missing file", filepath.Join(dir, "absent"), nil, Credentials{}, true},
		{"environment", "", map[string]string{EnvUsername: "u", EnvPassword: "p"}, Credentials{"u", "p"}, false},
		{"environment half set", "", map[string]string{EnvUsername: "u"}, Credentials{}, true},
		{"nothing: anonymous", "", nil, Credentials{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadCredentials(tc.file, env(tc.env))
			if tc.fail {
				if !errors.Is(err, ErrCredentials) {
					t.Fatalf("error = %v, want ErrCredentials", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The password file format is mosquitto's: check against mosquitto_passwd itself.
func TestPasswordFileReadsMosquittoPasswd(t *testing.T) {
	if _, err := exec.LookPath("mosquitto_passwd"); err != nil {
		t.Skipf("mosquitto_passwd not installed (apt-get install mosquitto): %v", err)
	}
	path := filepath.Join(t.TempDir(), "passwd")
	for i, acct := range []Credentials{{"alice", "s3cret:with colon"}, {"bob", "é ünïcode"}} {
		args := []string{"-b", path, acct.Username, acct.Password}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := exec.Command("mosquitto_passwd", args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v: %s", err, out)
		}
	}
	pf, err := LoadPasswordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"alice", "s3cret:with colon", true}, {"bob", "é ünïcode", true},
		{"alice", "s3cret", false}, {"bob", "s3cret:with colon", false}, {"carol", "", false}, {"", "", false},
	} {
		if got := pf.Verify(tc.user, []byte(tc.pass)); got != tc.ok {
			t.Errorf("Verify(%q, %q) = %v, want %v", tc.user, tc.pass, got, tc.ok)
		}
	}
	if pf.Len() != 2 || !pf.Has("bob") || pf.Has("carol") {
		t.Errorf("Len %d, Has(bob) %v, Has(carol) %v", pf.Len(), pf.Has("bob"), pf.Has("carol"))
	}
}

const aliceLine = "alice:$7$101$Xjbrs0bEkj6ezWNJ$/LyvsAtxbu37VinDo4o6SNouy0VrVwEFeo76rIvjval/dQdp8Lm02jnE/r4uvyzaXcwnAKAjKZRJGnUg72EUxQ=="

func TestParsePasswordFileRejectsMalformed(t *testing.T) {
	for name, data := range map[string]string{
		"no colon":             "alice\n",
		"empty user":           ":$7$101$Xjbrs0bEkj6ezWNJ$AAAA\n",
		"old sha512 format":    "alice:$6$Xjbrs0bEkj6ezWNJ$AAAA\n",
		"plain text":           "alice:secret\n",
		"iterations not int":   "alice:$7$many$Xjbrs0bEkj6ezWNJ$AAAA\n",
		"iterations zero":      "alice:$7$0$Xjbrs0bEkj6ezWNJ$AAAA\n",
		"iterations excessive": "alice:$7$999999999$Xjbrs0bEkj6ezWNJ$AAAA\n",
		"bad salt":             "alice:$7$101$***$AAAA\n",
		"empty hash":           "alice:$7$101$Xjbrs0bEkj6ezWNJ$\n",
		"too many fields":      "alice:$7$101$Xjbrs0bEkj6ezWNJ$AAAA$x\n",
		"duplicate user":       aliceLine + "\n" + aliceLine + "\n",
	} {
		if _, err := ParsePasswordFile([]byte(data)); !errors.Is(err, ErrCredentials) {
			t.Errorf("%s: error = %v, want ErrCredentials", name, err)
		}
	}
	pf, err := ParsePasswordFile([]byte("# operators\n\n" + aliceLine + "\n"))
	if err != nil || !pf.Verify("alice", []byte("s3cret:x")) {
		t.Fatalf("comment and blank lines: %v", err)
	}
}

func FuzzParsePasswordFile(f *testing.F) {
	f.Add([]byte(aliceLine + "\n"))
	f.Add([]byte("# c\n\nbob:$7$1$AAAA$AAAA\n"))
	f.Add([]byte("x:$7$101$$\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParsePasswordFile(data)
		if err != nil {
			if !errors.Is(err, ErrCredentials) {
				t.Fatalf("error without ErrCredentials: %v", err)
			}
			return
		}
		for user := range pf.users {
			pf.Verify(user, []byte("guess"))
		}
	})
}

func TestBrokerTLS(t *testing.T) {
	certs := newCerts(t)
	for _, tc := range []struct {
		name   string
		broker string
		files  TLSFiles
		tls    bool
		fail   bool
	}{
		{"plain", "tcp://127.0.0.1:1883", TLSFiles{}, false, false},
		{"tls with CA", "ssl://127.0.0.1:8883", TLSFiles{CAFile: certs.ca}, true, false},
		{"tls with system roots", "ssl://broker.example:8883", TLSFiles{}, true, false},
		{"tls with client certificate", "ssl://127.0.0.1:8883", TLSFiles{CAFile: certs.ca, CertFile: certs.cert, KeyFile: certs.key}, true, false},
		{"certificate without key", "ssl://127.0.0.1:8883", TLSFiles{CertFile: certs.cert}, false, true},
		{"TLS files for tcp", "tcp://127.0.0.1:1883", TLSFiles{CAFile: certs.ca}, false, true},
		{"CA file not PEM", "ssl://127.0.0.1:8883", TLSFiles{CAFile: certs.key}, false, true},
		{"CA file missing", "ssl://127.0.0.1:8883", TLSFiles{CAFile: "/nonexistent"}, false, true},
		{"websocket scheme", "ws://127.0.0.1:80", TLSFiles{}, false, true},
		{"no port", "tcp://127.0.0.1", TLSFiles{}, false, true},
		{"garbage", "::nope", TLSFiles{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := brokerTLS(tc.broker, tc.files)
			if tc.fail {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("error = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil || (cfg != nil) != tc.tls {
				t.Fatalf("cfg %v, err %v", cfg, err)
			}
		})
	}
}
