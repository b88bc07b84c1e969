package zookeeper

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/internal/freeport"
)

// fourLetterWords are the admin commands zkbench uses: srvr (readiness,
// version, role), mntr (server metrics), conf (limits), ruok, and wchs/cons
// for a person debugging a run.
const fourLetterWords = "mntr,conf,srvr,ruok,wchs,cons"

// assignPorts gives each member a client, quorum and election port.
func assignPorts(members []Member) error {
	// The ports were free a moment ago; another process may still take one
	// before the server binds it. Start retries with fresh ports when a
	// server reports a bind failure.
	ports, err := freeport.Ports(3 * len(members))
	if err != nil {
		return fmt.Errorf("cluster/zookeeper: pick a free port: %w", err)
	}
	for i := range members {
		members[i].ClientPort = ports[3*i]
		members[i].QuorumPort = ports[3*i+1]
		members[i].ElectionPort = ports[3*i+2]
	}
	return nil
}

// configText renders member m's zoo.cfg. Standalone when it is alone.
func configText(m Member, all []Member, tm Timing, extra map[string]string) string {
	lines := append(tm.lines(),
		"dataDir="+m.DataDir,
		"clientPortAddress=127.0.0.1",
		"clientPort="+strconv.Itoa(m.ClientPort),
		// zkbench opens thousands of sessions from one IP.
		"maxClientCnxns=0",
		"4lw.commands.whitelist="+fourLetterWords,
		"admin.enableServer=false",
		// Keep old snapshots and logs from piling up during long runs.
		"autopurge.snapRetainCount=3",
		"autopurge.purgeInterval=1",
	)
	if len(all) > 1 {
		for _, o := range all {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", o.ID, o.QuorumPort, o.ElectionPort))
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lines = append(lines, k+"="+extra[k])
	}
	return strings.Join(lines, "\n") + "\n"
}

// logbackXML and log4jProps keep an Apache tarball's server quiet (WARN to
// the captured stdout); the simpleLogger properties do the same for
// Debian's jar with slf4j-simple.
const logbackXML = `<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="CONSOLE"/></root>
</configuration>
`

const log4jProps = `log4j.rootLogger=WARN, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
`

// writeMemberFiles lays out member m's folder: data/myid, zoo.cfg.
func writeMemberFiles(m Member, all []Member, tm Timing, extra map[string]string) error {
	if err := os.MkdirAll(m.DataDir, 0o755); err != nil {
		return fmt.Errorf("cluster/zookeeper: %w", err)
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
		return fmt.Errorf("cluster/zookeeper: %w", err)
	}
	if err := os.WriteFile(m.ConfigPath, []byte(configText(m, all, tm, extra)), 0o644); err != nil {
		return fmt.Errorf("cluster/zookeeper: %w", err)
	}
	return nil
}

// writeLogConfigs writes the logging configs shared by every member.
func writeLogConfigs(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "logback.xml"), []byte(logbackXML), 0o644); err != nil {
		return fmt.Errorf("cluster/zookeeper: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(log4jProps), 0o644); err != nil {
		return fmt.Errorf("cluster/zookeeper: %w", err)
	}
	return nil
}

// javaArgs are the JVM's arguments for member m.
func javaArgs(st *State, m Member) []string {
	return []string{
		"-Xmx" + strconv.Itoa(st.HeapMB) + "m",
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dlogback.configurationFile=" + filepath.Join(st.Dir, "logback.xml"),
		"-Dlog4j.configuration=file:" + filepath.Join(st.Dir, "log4j.properties"),
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", strings.Join(st.Dist.Classpath, string(os.PathListSeparator)),
		mainClass,
		m.ConfigPath,
	}
}
