package zookeeper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Errors returned when no server can be started, checked with errors.Is.
var (
	// ErrNotInstalled: no ZooKeeper distribution was found.
	ErrNotInstalled = errors.New("cluster/zookeeper: ZooKeeper not installed")
	// ErrNoJava: no java binary was found.
	ErrNoJava = errors.New("cluster/zookeeper: java not found")
)

// debianJar is the jar of Debian's zookeeper package; its manifest
// Class-Path names every other jar the server needs.
const debianJar = "/usr/share/java/zookeeper.jar"

// debianSimpleLogger is slf4j's stderr binding, from libslf4j-java.
const debianSimpleLogger = "/usr/share/java/slf4j-simple.jar"

// mainClass starts a standalone server or an ensemble member.
const mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// Distribution is an installed ZooKeeper and the java that runs it.
type Distribution struct {
	// Java is the java binary.
	Java string `json:"java"`
	// Classpath lists the jars passed to java -cp.
	Classpath []string `json:"classpath"`
	// Home is ZOOKEEPER_HOME, or "" for Debian's package.
	Home string `json:"home,omitempty"`
}

// Find locates ZooKeeper and java. ZooKeeper: $ZOOKEEPER_HOME (its lib/*.jar
// and any zookeeper-*.jar at its top, as in Apache's binary tarball), else
// Debian's /usr/share/java/zookeeper.jar. Java: $JAVA_HOME/bin/java, else
// java on PATH. The error says what to install.
func Find() (Distribution, error) {
	var d Distribution
	java, err := findJava()
	if err != nil {
		return d, err
	}
	d.Java = java
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		jars, err := homeJars(home)
		if err != nil {
			return d, err
		}
		d.Home, d.Classpath = home, jars
		return d, nil
	}
	if _, err := os.Stat(debianJar); err == nil {
		d.Classpath = []string{debianJar}
		// Debian's jar has no slf4j binding and so logs nothing, not even
		// why it exits; libslf4j-java (a dependency) ships a simple one.
		if _, err := os.Stat(debianSimpleLogger); err == nil {
			d.Classpath = append(d.Classpath, debianSimpleLogger)
		}
		return d, nil
	}
	return d, fmt.Errorf("%w: install ZooKeeper: apt-get install zookeeper, or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper binary release", ErrNotInstalled)
}

func homeJars(home string) ([]string, error) {
	var jars []string
	for _, pattern := range []string{"lib/*.jar", "zookeeper-*.jar"} {
		m, _ := filepath.Glob(filepath.Join(home, pattern))
		jars = append(jars, m...)
	}
	sort.Strings(jars)
	for _, j := range jars {
		if base := filepath.Base(j); strings.HasPrefix(base, "zookeeper-") && !strings.HasPrefix(base, "zookeeper-jute") {
			return jars, nil
		}
	}
	return nil, fmt.Errorf("%w: ZOOKEEPER_HOME=%s holds no zookeeper-*.jar in lib/ or at its top; point it at an unpacked Apache ZooKeeper binary release (apache-zookeeper-X.Y.Z-bin), or unset it to use Debian's package (apt-get install zookeeper)", ErrNotInstalled, home)
}

func findJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		j := filepath.Join(jh, "bin", "java")
		if st, err := os.Stat(j); err == nil && !st.IsDir() {
			return j, nil
		}
		return "", fmt.Errorf("%w: JAVA_HOME=%s has no bin/java; fix JAVA_HOME or unset it to use java from PATH", ErrNoJava, jh)
	}
	j, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: install Java (apt-get install default-jre-headless) or set JAVA_HOME", ErrNoJava)
	}
	return j, nil
}
