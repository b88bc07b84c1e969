package fourlw

import "testing"

func TestMntrGauge(t *testing.T) {
	// Lines of a ZooKeeper 3.8.0 mntr reply (standalone, one session).
	for name, gauge := range map[string]bool{
		"zk_avg_latency": true, "zk_min_latency": true, "zk_max_latency": true,
		"zk_p50_propagation_latency": true, "zk_p999_readlatency": true,
		"zk_num_alive_connections": true, "zk_znode_count": true, "zk_watch_count": true,
		"zk_max_file_descriptor_count": true, "zk_open_file_descriptor_count": true,
		"zk_last_client_response_size": true, "zk_max_client_response_size": true,
		"zk_packets_received": false, "zk_packets_sent": false, "zk_cnt_updatelatency": false,
		"zk_sum_node_deleted_watch_count": false, "zk_bytes_received_count": false, "zk_uptime": false,
		"zk_cnt_zkbench_read_per_namespace": false,
	} {
		if got := MntrGauge(name); got != gauge {
			t.Errorf("MntrGauge(%q) = %v, want %v", name, got, gauge)
		}
	}
}
