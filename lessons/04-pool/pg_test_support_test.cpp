// The tests' own PostgreSQL plumbing: a cluster is found wherever the checkout lives, and
// starting one leaves a clean server log.
#include "lessons/04-pool/pg_connection.hpp"
#include "lessons/04-pool/pg_test_support.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <stdlib.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

// A directory only its owner may enter (mkdtemp makes it 0700), removed with what is in it.
// Run as root, the server's user (nobody) is shut out of it, as from a checkout under /root.
struct ClosedDirectory {
    std::string path;
    ClosedDirectory() {
        std::string name = test_log_dir() + "/closed.XXXXXX";
        if (!::mkdtemp(name.data())) throw std::runtime_error("mkdtemp failed for " + name);
        path = name;
    }
    ~ClosedDirectory() {
        std::string output;
        run_program({"/bin/rm", "-rf", path}, output);
    }
};

std::string text_of(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_CASE("a cluster started in a directory the server's user cannot enter is found and answers",
          "[lesson04][pg]") {
    ClosedDirectory closed;
    STEP("created " << closed.path << " (mode 0700; running as uid " << ::getuid()
                    << ", so the server runs as " << (::getuid() == 0 ? "nobody" : "us") << ")");
    PrivateCluster cluster("closed", closed.path);
    STEP("pg-cluster started a cluster in " << cluster.dir() << ": " << cluster.conninfo());
    const std::string conninfo = cluster_conninfo(cluster.dir());
    STEP("the tests' lookup (what test_conninfo() does for the fixture) found: " << conninfo);
    CHECK(conninfo == cluster.conninfo());
    PgConnection connection(conninfo, 5s);
    CHECK(connection.query("SELECT 6 * 7", 5s).value(0, 0) == "42");
}

TEST_CASE("starting a cluster logs no failed connection attempt", "[lesson04][pg]") {
    ClosedDirectory closed;
    PrivateCluster cluster("clean-log", closed.path);
    const std::string log = text_of(cluster.dir() + "/server.log");
    STEP("pg-cluster started " << cluster.dir() << "; its server.log reads:\n" << log);
    // Whatever checks that the server is up must log in as a role that exists (postgres), not
    // as the user who ran the script: that attempt is logged as 'FATAL:  role "..." does not
    // exist'. (Other FATALs can be other tests' clients: under ctest -j, a test whose cluster is
    // down for a restart retries its port, which this cluster may have taken while starting.)
    CHECK(log.find("database system is ready to accept connections") != std::string::npos);
    CHECK(log.find("FATAL:  role") == std::string::npos);
}

TEST_CASE("where no cluster runs, the lookup says how to get one", "[lesson04][pg]") {
    ClosedDirectory empty;
    try {
        cluster_conninfo(empty.path);
        FAIL("cluster_conninfo(" << empty.path << ") returned though no cluster runs there");
    } catch (const std::runtime_error& e) {
        STEP("cluster_conninfo(" << empty.path << ") threw: " << e.what());
        CHECK(std::string(e.what()).rfind("no PostgreSQL for this test: ", 0) == 0);
    }
}
