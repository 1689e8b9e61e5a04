// Black-box fuzz driver for the `reprokit` command line (see tests/fuzz/README.md).
//
//   fuzz_driver fuzz   --exe PATH --corpus rk|bundle --count N [--seed S] [--jobs J] [--timeout SEC]
//                      [--out DIR] [--memory-limit MB] [--keep-temp]
//   fuzz_driver replay --exe PATH --corpus-dir DIR [--only NAME[,NAME]] [--keep-temp] [--verbose]
//
// Every child starts from an argv vector (no shell), with cwd = its own temp directory, the
// REPRO_* variables of the caller removed, REPRO_CACHE_DIR pointing at a shared cache and an
// address-space limit. The driver is a child subreaper: whatever a child leaves running is killed
// and reported after each run.
//
// fuzz: a finding is a run killed by a signal, a run over the per-run limit, or an exit status
// outside {0, 1, 2}. Exit 0 when there is none, 1 otherwise, 2 on bad usage.
// replay: exit 0 when every case passes (or is skipped with a note), 1 otherwise, 2 on bad usage.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <functional>
#include <future>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "reprokit/process/subprocess.h"

#ifndef REPROKIT_SOURCE_DIR
#define REPROKIT_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;
using json = nlohmann::json;
using reprokit::ProcessResult;
using reprokit::ProcessSpec;

namespace {

// ------------------------------------------------------------------------------------------------
// Small utilities

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Deterministic PRNG (splitmix64); distributions are our own so results do not depend on the
// standard library's implementation.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }
  template <class T> const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
};

uint64_t mix_seed(uint64_t seed, uint64_t index) {
  Rng a(seed * 0x100000001b3ULL + 0x5bd1e995ULL);
  Rng b(index + 0x632be59bd9b4e019ULL);
  return a.next() ^ (b.next() * 0x9e3779b97f4a7c15ULL);
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + p.string());
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

std::string dump_json(const json& j, int indent = 2) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

fs::path make_temp_dir(const fs::path& base, const std::string& prefix) {
  fs::create_directories(base);
  std::string templ = (base / (prefix + "XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp " + templ + ": " + strerror(errno));
  return fs::path(buf.data());
}

bool lstat_ok(const fs::path& p, struct stat& st) { return ::lstat(p.c_str(), &st) == 0; }

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Recursive copy that never follows symlinks and never opens special files: symlinks are copied
// as symlinks, FIFOs recreated with mkfifo, anything else special is skipped.
void copy_tree(const fs::path& from, const fs::path& to) {
  struct stat st;
  if (!lstat_ok(from, st)) return;
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> buf(static_cast<size_t>(st.st_size) + 4096);
    ssize_t n = readlink(from.c_str(), buf.data(), buf.size());
    if (n >= 0) (void)!symlink(std::string(buf.data(), static_cast<size_t>(n)).c_str(), to.c_str());
  } else if (S_ISDIR(st.st_mode)) {
    ::mkdir(to.c_str(), 0700);
    for (auto& n : list_dir(from)) copy_tree(from / n, to / n);
    ::chmod(to.c_str(), st.st_mode & 07777);
  } else if (S_ISREG(st.st_mode)) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    ::chmod(to.c_str(), st.st_mode & 07777);
  } else if (S_ISFIFO(st.st_mode)) {
    ::mkfifo(to.c_str(), st.st_mode & 0777);
  }
}

// Makes every directory below p (not following symlinks) accessible again, then removes p.
void remove_tree(const fs::path& p) {
  struct stat st;
  if (!lstat_ok(p, st)) return;
  if (S_ISDIR(st.st_mode)) {
    ::chmod(p.c_str(), 0700);
    for (auto& n : list_dir(p)) remove_tree(p / n);
  }
  std::error_code ec;
  fs::remove_all(p, ec);
}

// The checksum reprokit writes into manifests ("fnv1a64:<hex>"; note its offset basis,
// 1469598103934665603, is not FNV's 14695981039346656037: we compute what the product computes).
std::string product_checksum(const std::string& data) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("fnv1a64:{:016x}", h);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A record of a tree (types, sizes, hashes, link targets), never following symlinks or opening
// FIFOs, for "was anything outside the bundle written?" checks.
using Snapshot = std::map<std::string, std::string>;

void snapshot_into(const fs::path& root, const fs::path& rel, const std::set<fs::path>& exclude, Snapshot& out) {
  fs::path p = rel.empty() ? root : root / rel;
  if (exclude.count(p)) return;
  struct stat st;
  if (!lstat_ok(p, st)) return;
  std::string key = rel.empty() ? "." : rel.string();
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> buf(static_cast<size_t>(st.st_size) + 4096);
    ssize_t n = readlink(p.c_str(), buf.data(), buf.size());
    out[key] = "link -> " + (n >= 0 ? std::string(buf.data(), static_cast<size_t>(n)) : "?");
  } else if (S_ISDIR(st.st_mode)) {
    out[key] = fmt::format("dir {:o}", st.st_mode & 07777);
    for (auto& n : list_dir(p)) snapshot_into(root, rel / n, exclude, out);
  } else if (S_ISREG(st.st_mode)) {
    std::string sig = fmt::format("file {} bytes", st.st_size);
    if (st.st_size <= (64 << 20)) {
      std::ifstream f(p, std::ios::binary);
      std::ostringstream ss;
      ss << f.rdbuf();
      sig += fmt::format(" fnv1a {:016x}", fnv1a(ss.str()));
    }
    out[key] = sig;
  } else if (S_ISFIFO(st.st_mode)) {
    out[key] = "fifo";
  } else {
    out[key] = fmt::format("special {:o}", st.st_mode);
  }
}

Snapshot snapshot(const fs::path& root, const std::set<fs::path>& exclude = {}) {
  Snapshot s;
  snapshot_into(root, {}, exclude, s);
  return s;
}

std::vector<std::string> snapshot_diff(const Snapshot& before, const Snapshot& after) {
  std::vector<std::string> d;
  for (auto& [k, v] : after) {
    auto it = before.find(k);
    if (it == before.end()) d.push_back("created " + k + " (" + v + ")");
    else if (it->second != v) d.push_back("changed " + k + " (" + it->second + " -> " + v + ")");
  }
  for (auto& [k, v] : before)
    if (!after.count(k)) d.push_back("removed " + k);
  return d;
}

std::string signal_name(int sig) {
  const char* n = sigabbrev_np(sig);
  return n ? fmt::format("SIG{}", n) : fmt::format("signal {}", sig);
}

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

std::string first_line(const std::string& s) {
  size_t b = 0;
  while (b < s.size() && (s[b] == '\n' || s[b] == '\r')) ++b;
  size_t e = s.find('\n', b);
  std::string l = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
  if (l.size() > 200) l = l.substr(0, 200) + "...";
  return l;
}

std::string last_line(const std::string& s) {
  size_t e = s.size();
  while (e > 0 && (s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  size_t b = s.rfind('\n', e ? e - 1 : 0);
  b = (b == std::string::npos || e == 0) ? 0 : b + 1;
  std::string l = s.substr(b, e - b);
  if (l.size() > 200) l = l.substr(0, 200) + "...";
  return l;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// Kills and reaps whatever descendants outlived the last child (we are their subreaper).
// Returns how many processes were found.
int reap_leftovers() {
  int found = 0;
  pid_t self = getpid();
  for (int round = 0; round < 40; ++round) {
    std::vector<pid_t> kids;
    for (auto& n : list_dir("/proc")) {
      if (n.empty() || !std::all_of(n.begin(), n.end(), ::isdigit)) continue;
      std::ifstream f("/proc/" + n + "/stat");
      std::string stat;
      std::getline(f, stat);
      size_t rp = stat.rfind(')');
      if (rp == std::string::npos) continue;
      std::istringstream rest(stat.substr(rp + 2));
      char state;
      long ppid = 0, pgid = 0;
      rest >> state >> ppid >> pgid;
      const auto pid = static_cast<pid_t>(std::stol(n));
      if (ppid == self && pid != reprokit::reaper_pid()) kids.push_back(pid);  // our own reaper is no leftover
    }
    // Reap zombies and anything already gone.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {}
    if (kids.empty()) break;
    for (pid_t k : kids) {
      pid_t pg = getpgid(k);
      if (pg > 0 && pg != getpgrp()) kill(-pg, SIGKILL);
      kill(k, SIGKILL);
      ++found;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (waitpid(-1, nullptr, WNOHANG) > 0) {}
  }
  return found;
}

const std::vector<std::string> kReproVars = {"REPRO_AFTER",   "REPRO_LEVEL",  "REPRO_DIR",         "REPRO_MINIFY",    "REPRO_TOLERANCE",
                                             "REPRO_TIMEOUT", "REPRO_INJECT", "REPRO_INJECT_PASS", "REPRO_CACHE_DIR", "REPROKIT_EXE"};

// ------------------------------------------------------------------------------------------------
// Command-line options

struct Args {
  std::string mode;
  std::map<std::string, std::string> opts;
  std::set<std::string> flags;
};

Args parse_args(int argc, char** argv, const std::set<std::string>& valued, const std::set<std::string>& flags) {
  Args a;
  if (argc < 2) throw UsageError("missing mode (fuzz or replay)");
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (valued.count(k)) {
      if (i + 1 >= argc) throw UsageError(k + " needs a value");
      a.opts[k] = argv[++i];
    } else if (flags.count(k)) {
      a.flags.insert(k);
    } else {
      throw UsageError("unknown option '" + k + "'");
    }
  }
  return a;
}

long to_long(const std::string& s, const std::string& what, long lo, long hi) {
  try {
    size_t n = 0;
    long v = std::stol(s, &n);
    if (n != s.size() || v < lo || v > hi) throw std::out_of_range(s);
    return v;
  } catch (const std::exception&) { throw UsageError(fmt::format("{}: expected an integer in [{}, {}], got '{}'", what, lo, hi, s)); }
}

double to_double(const std::string& s, const std::string& what) {
  try {
    size_t n = 0;
    double v = std::stod(s, &n);
    if (n != s.size() || !(v > 0) || v > 86400) throw std::out_of_range(s);
    return v;
  } catch (const std::exception&) { throw UsageError(fmt::format("{}: expected seconds in (0, 86400], got '{}'", what, s)); }
}

// ------------------------------------------------------------------------------------------------
// Text (.rk) mutators

struct Span {
  size_t begin, end;
};

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

std::vector<Span> find_numbers(const std::string& t) {
  std::vector<Span> out;
  for (size_t i = 0; i < t.size(); ++i) {
    bool neg = t[i] == '-' && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i + 1]));
    if (!std::isdigit(static_cast<unsigned char>(t[i])) && !neg) continue;
    if (i > 0 && (is_name_char(t[i - 1]) || t[i - 1] == '%')) {
      while (i < t.size() && is_name_char(t[i])) ++i;
      continue;
    }
    size_t j = i + (neg ? 1 : 0);
    while (j < t.size() && (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '.')) ++j;
    if (j < t.size() && (t[j] == 'e' || t[j] == 'E')) {
      size_t k = j + 1;
      if (k < t.size() && (t[k] == '+' || t[k] == '-')) ++k;
      if (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) {
        j = k;
        while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
      }
    }
    out.push_back({i, j});
    i = j;
  }
  return out;
}

std::vector<Span> find_value_names(const std::string& t) {
  std::vector<Span> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '%') continue;
    size_t j = i + 1;
    while (j < t.size() && is_name_char(t[j])) ++j;
    if (j > i + 1) out.push_back({i, j});
    i = j - 1;
  }
  return out;
}

// Op names: an identifier after "= " and before "(".
std::vector<Span> find_op_names(const std::string& t) {
  std::vector<Span> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '=' || (i + 1 < t.size() && t[i + 1] == '=')) continue;
    size_t j = i + 1;
    while (j < t.size() && t[j] == ' ') ++j;
    size_t b = j;
    while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
    if (j > b && j < t.size() && t[j] == '(') out.push_back({b, j});
  }
  return out;
}

const std::vector<std::string> kDtypes = {"f16", "bf16", "f32", "f64", "i32", "i64", "bool"};

std::vector<Span> find_dtypes(const std::string& t) {
  std::vector<Span> out;
  for (auto& d : kDtypes) {
    size_t pos = 0;
    while ((pos = t.find(d, pos)) != std::string::npos) {
      size_t e = pos + d.size();
      bool left_ok = pos == 0 || !is_name_char(t[pos - 1]) || t[pos - 1] == '.';
      bool right_ok = e >= t.size() || !is_name_char(t[e]);
      if (left_ok && right_ok && !(pos > 0 && t[pos - 1] == '%')) out.push_back({pos, e});
      pos = e;
    }
  }
  return out;
}

// The shape brackets of a type: dtype followed by "[...]".
std::vector<Span> find_type_shapes(const std::string& t) {
  std::vector<Span> out;
  for (auto& d : find_dtypes(t)) {
    if (d.end < t.size() && t[d.end] == '[') {
      size_t close = t.find(']', d.end);
      if (close != std::string::npos) out.push_back({d.end, close + 1});
    }
  }
  return out;
}

const std::vector<std::string> kHostileNumbers = {
    "0", "-1", "1", "2", "2147483648", "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1e308", "-1e308", "nan", "inf"};

std::vector<std::string> hostile_rk_names() {
  return {"%a\nb",
          "%s%n%p",
          "%../../x",
          "%/tmp/x",
          "%" + std::string(10000, 'a'),
          "%a\"b",
          "%a\\b",
          "%a'b",
          "%\xc3\xa9",
          "%\xe2\x80\x98x\xe2\x80\x99",
          "%",
          "%1x",
          std::string("%a\0b", 4),
          "%a b"};
}

std::vector<std::string> split_lines(const std::string& t) {
  std::vector<std::string> lines;
  size_t b = 0;
  while (b <= t.size()) {
    size_t e = t.find('\n', b);
    if (e == std::string::npos) {
      lines.push_back(t.substr(b));
      break;
    }
    lines.push_back(t.substr(b, e - b));
    b = e + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    out += lines[i];
  }
  return out;
}

std::string printable(const std::string& s, size_t max = 60) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max) out += fmt::format("...({} bytes)", s.size());
  return out;
}

// Applies one text mutation; returns a description.
std::string mutate_text_once(std::string& t, Rng& rng) {
  auto splice = [&](Span s, const std::string& with) { t.replace(s.begin, s.end - s.begin, with); };
  for (int attempt = 0; attempt < 20; ++attempt) {
    switch (rng.below(15)) {
      case 0: {  // flip a bit
        if (t.empty()) break;
        size_t i = rng.below(t.size());
        t[i] = static_cast<char>(t[i] ^ (1 << rng.below(8)));
        return fmt::format("bit flip at byte {}", i);
      }
      case 1: {  // insert a byte
        static const std::string interesting = "[](){}%=:,@#\"\\\n\0\xff-.e9";
        size_t i = rng.below(t.size() + 1);
        char c = rng.chance(50) ? interesting[rng.below(interesting.size())] : static_cast<char>(rng.below(256));
        t.insert(t.begin() + static_cast<long>(i), c);
        return fmt::format("insert byte 0x{:02x} at {}", static_cast<unsigned char>(c), i);
      }
      case 2: {  // delete bytes
        if (t.empty()) break;
        size_t i = rng.below(t.size());
        size_t n = 1 + rng.below(std::min<size_t>(16, t.size() - i));
        t.erase(i, n);
        return fmt::format("delete {} bytes at {}", n, i);
      }
      case 3: {  // duplicate a chunk
        if (t.empty()) break;
        size_t i = rng.below(t.size());
        size_t n = 1 + rng.below(std::min<size_t>(128, t.size() - i));
        std::string chunk = t.substr(i, n);
        size_t at = rng.below(t.size() + 1);
        t.insert(at, chunk);
        return fmt::format("duplicate {} bytes from {} to {}", n, i, at);
      }
      case 4: {  // hostile number
        auto nums = find_numbers(t);
        if (nums.empty()) break;
        Span s = rng.pick(nums);
        std::string with = rng.pick(kHostileNumbers);
        std::string old = t.substr(s.begin, s.end - s.begin);
        splice(s, with);
        return fmt::format("number {} -> {} at {}", old, with, s.begin);
      }
      case 5: {  // hostile value name
        auto names = find_value_names(t);
        if (names.empty()) break;
        Span s = rng.pick(names);
        std::string old = t.substr(s.begin, s.end - s.begin);
        auto hostile = hostile_rk_names();
        std::string with = rng.pick(hostile);
        if (rng.chance(60)) {  // every occurrence of the name
          std::string out;
          size_t count = 0;
          for (size_t i = 0; i < t.size();) {
            if (t.compare(i, old.size(), old) == 0 && (i + old.size() >= t.size() || !is_name_char(t[i + old.size()]))) {
              out += with;
              i += old.size();
              ++count;
            } else {
              out += t[i++];
            }
          }
          t = out;
          return fmt::format("rename {} -> {} ({} occurrences)", old, printable(with), count);
        }
        splice(s, with);
        return fmt::format("rename one {} -> {}", old, printable(with));
      }
      case 6: {  // duplicate a line
        auto lines = split_lines(t);
        size_t i = rng.below(lines.size());
        lines.insert(lines.begin() + static_cast<long>(rng.below(lines.size() + 1)), lines[i]);
        t = join_lines(lines);
        return fmt::format("duplicate line {}", i + 1);
      }
      case 7: {  // delete a line
        auto lines = split_lines(t);
        if (lines.size() < 2) break;
        size_t i = rng.below(lines.size());
        lines.erase(lines.begin() + static_cast<long>(i));
        t = join_lines(lines);
        return fmt::format("delete line {}", i + 1);
      }
      case 8: {  // swap two lines
        auto lines = split_lines(t);
        if (lines.size() < 2) break;
        size_t i = rng.below(lines.size()), j = rng.below(lines.size());
        std::swap(lines[i], lines[j]);
        t = join_lines(lines);
        return fmt::format("swap lines {} and {}", i + 1, j + 1);
      }
      case 9: {  // deep nesting
        size_t at;
        auto shapes = find_type_shapes(t);
        size_t attr = t.find("=[");
        if (!shapes.empty() && rng.chance(40)) at = rng.pick(shapes).begin + 1;
        else if (attr != std::string::npos && rng.chance(50)) at = attr + 2;
        else at = rng.below(t.size() + 1);
        t.insert(at, std::string(50000, '['));
        return fmt::format("insert 50000 '[' at {}", at);
      }
      case 10: {  // replace an op name by another one of the file
        auto ops = find_op_names(t);
        if (ops.size() < 1) break;
        std::vector<std::string> names;
        for (auto& s : ops) names.push_back(t.substr(s.begin, s.end - s.begin));
        Span s = rng.pick(ops);
        std::string old = t.substr(s.begin, s.end - s.begin);
        std::string with = rng.pick(names);
        if (with == old) with = names[(rng.below(names.size()))];
        splice(s, with);
        return fmt::format("op {} -> {}", old, with);
      }
      case 11: {  // change a dtype
        auto ds = find_dtypes(t);
        if (ds.empty()) break;
        Span s = rng.pick(ds);
        static const std::vector<std::string> bogus = {"f16", "bf16", "f32", "f64", "i32", "i64", "bool", "f8", "c64", "u8", ""};
        std::string old = t.substr(s.begin, s.end - s.begin);
        std::string with = rng.pick(bogus);
        splice(s, with);
        return fmt::format("dtype {} -> {}", old, with.empty() ? "(empty)" : with);
      }
      case 12: {  // huge strides
        auto shapes = find_type_shapes(t);
        if (shapes.empty()) break;
        Span s = rng.pick(shapes);
        t.insert(s.end, " strides=[9223372036854775807, 1]");
        return fmt::format("strides=[9223372036854775807, 1] after the type at {}", s.begin);
      }
      case 13: {  // a dimension of 100000
        auto shapes = find_type_shapes(t);
        if (shapes.empty()) break;
        Span sh = rng.pick(shapes);
        auto nums = find_numbers(t.substr(sh.begin, sh.end - sh.begin));
        if (nums.empty()) break;
        Span n = rng.pick(nums);
        splice({sh.begin + n.begin, sh.begin + n.end}, "100000");
        return fmt::format("dimension at {} -> 100000", sh.begin + n.begin);
      }
      case 14: {  // truncate
        if (t.empty()) break;
        size_t at = rng.below(t.size());
        t.resize(at);
        return fmt::format("truncate at {}", at);
      }
    }
  }
  return "no-op";
}

std::vector<std::string> mutate_text(std::string& t, Rng& rng) {
  std::vector<std::string> log;
  size_t n = 1 + rng.below(3);
  for (size_t i = 0; i < n; ++i) log.push_back(mutate_text_once(t, rng));
  return log;
}

// ------------------------------------------------------------------------------------------------
// JSON mutators

void collect_pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& scalars,
                      std::vector<json::json_pointer>& members) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      members.push_back(at / k);
      collect_pointers(v, at / k, scalars, members);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) collect_pointers(j[i], at / i, scalars, members);
  } else {
    scalars.push_back(at);
  }
}

// A replacement for a scalar: another type, a huge or negative number, a hostile string.
// Raw JSON texts that nlohmann cannot hold (99999999999999999999, 1e999) go in as markers that
// are replaced after dumping.
json hostile_scalar(const json& old, Rng& rng, std::vector<std::string>& raw) {
  std::vector<json> pool = {json(""),
                            json("../../etc/x"),
                            json("/dev/zero"),
                            json("/tmp/x"),
                            json(-1),
                            json(-9223372036854775807LL - 1),
                            json(9223372036854775807LL),
                            json(18446744073709551615ULL),
                            json(1e308),
                            json(-1e308),
                            json(0.5),
                            json(nullptr),
                            json(true),
                            json::array(),
                            json::object(),
                            json("s%n%p"),
                            json("a\nb"),
                            json(std::string(10000, 'a')),
                            json("\xc3\xa9")};
  if (old.is_string()) pool.push_back(json(12345));
  if (old.is_number()) pool.push_back(json("12"));
  if (rng.chance(15)) {
    static const std::vector<std::string> raws = {"99999999999999999999", "-99999999999999999999", "1e999", "-0",
                                                  "9223372036854775808",  "-9223372036854775809",  "1.0"};
    raw.push_back(rng.pick(raws));
    return json(fmt::format("@@RAW{}@@", raw.size() - 1));
  }
  return rng.pick(pool);
}

std::string dump_with_raw(const json& j, const std::vector<std::string>& raw) {
  std::string s = dump_json(j);
  for (size_t i = 0; i < raw.size(); ++i) replace_all(s, fmt::format("\"@@RAW{}@@\"", i), raw[i]);
  return s;
}

std::vector<std::string> hostile_json_names() {
  return {"a\nb",
          "s%n%p",
          "%s%n",
          "%p",
          "../../x",
          "/tmp/x",
          std::string(10000, 'a'),
          "a\"b",
          "a\\b",
          "\xc3\xa9",
          "\xe2\x80\x98x\xe2\x80\x99",
          "",
          "a b",
          std::string("a\0b", 3),
          "1abc"};
}

// Renames a node of manifest["graph"] to `to` in the graph JSON and in graph_text.
bool rename_graph_value(json& m, const std::string& from, const std::string& to) {
  if (!m.contains("graph") || !m["graph"].is_object()) return false;
  json& g = m["graph"];
  bool any = false;
  std::function<void(json&)> walk = [&](json& j) {
    if (j.is_object()) {
      for (auto& [k, v] : j.items()) {
        if ((k == "name" || k == "value") && v.is_string() && v.get<std::string>() == from) {
          v = to;
          any = true;
        } else {
          walk(v);
        }
      }
    } else if (j.is_array()) {
      for (auto& v : j) {
        if (v.is_string() && v.get<std::string>() == from) {
          v = to;
          any = true;
        } else {
          walk(v);
        }
      }
    }
  };
  walk(g);
  if (m.contains("graph_text") && m["graph_text"].is_string()) {
    std::string t = m["graph_text"].get<std::string>(), out;
    std::string pat = "%" + from;
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, pat.size(), pat) == 0 && (i + pat.size() >= t.size() || !is_name_char(t[i + pat.size()]))) {
        out += "%" + to;
        i += pat.size();
      } else {
        out += t[i++];
      }
    }
    m["graph_text"] = out;
  }
  return any;
}

// ------------------------------------------------------------------------------------------------
// .npy mutators

struct Npy {
  std::string magic_version;  // 8 bytes
  int header_len_bytes = 2;
  std::string dict;
  std::string data;
};

std::optional<Npy> parse_npy(const std::string& s) {
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) return std::nullopt;
  Npy n;
  n.magic_version = s.substr(0, 8);
  size_t hl;
  size_t off;
  if (static_cast<unsigned char>(s[6]) == 1) {
    hl = static_cast<unsigned char>(s[8]) | (static_cast<unsigned char>(s[9]) << 8);
    off = 10;
  } else {
    if (s.size() < 12) return std::nullopt;
    n.header_len_bytes = 4;
    hl = 0;
    for (int i = 3; i >= 0; --i) hl = (hl << 8) | static_cast<unsigned char>(s[8 + static_cast<size_t>(i)]);
    off = 12;
  }
  if (off + hl > s.size()) return std::nullopt;
  n.dict = s.substr(off, hl);
  n.data = s.substr(off + hl);
  return n;
}

std::string build_npy(const Npy& n) {
  std::string dict = n.dict;
  while (!dict.empty() && (dict.back() == ' ' || dict.back() == '\n')) dict.pop_back();
  size_t prefix = 8 + static_cast<size_t>(n.header_len_bytes);
  size_t total = prefix + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict += std::string(pad, ' ') + "\n";
  std::string out = n.magic_version;
  size_t hl = dict.size();
  for (int i = 0; i < n.header_len_bytes; ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  return out + dict + n.data;
}

// Replaces the value of key in a Python-dict header ('key': value,).
void set_dict_value(std::string& dict, const std::string& key, const std::string& value) {
  std::string k = "'" + key + "':";
  size_t p = dict.find(k);
  if (p == std::string::npos) return;
  size_t b = p + k.size();
  while (b < dict.size() && dict[b] == ' ') ++b;
  size_t e = b;
  if (e < dict.size() && dict[e] == '(') e = dict.find(')', e) + 1;
  else if (e < dict.size() && dict[e] == '\'') e = dict.find('\'', e + 1) + 1;
  else
    while (e < dict.size() && dict[e] != ',' && dict[e] != '}') ++e;
  dict.replace(b, e - b, value);
}

std::string mutate_npy(const fs::path& p, Rng& rng) {
  std::string s = read_file(p);
  auto n = parse_npy(s);
  if (!n) {
    s.resize(s.size() / 2);
    write_file(p, s);
    return "truncate unparsable npy " + p.filename().string();
  }
  std::string what;
  switch (rng.below(9)) {
    case 0:
      set_dict_value(n->dict, "shape", "(99999999999999999999,)");
      what = "shape (99999999999999999999,)";
      break;
    case 1:
      set_dict_value(n->dict, "shape", "(-8, -16)");
      what = "shape (-8, -16)";
      break;
    case 2:
      set_dict_value(n->dict, "shape", "(4294967296, 4294967296)");
      what = "shape (4294967296, 4294967296)";
      break;
    case 3:
      set_dict_value(n->dict, "descr", "'<c16'");
      what = "descr <c16";
      break;
    case 4:
      set_dict_value(n->dict, "descr", rng.pick(std::vector<std::string>{"'>f4'", "'|O'", "'<U8'", "'<f2'", "''"}));
      what = "descr bogus";
      break;
    case 5:
      set_dict_value(n->dict, "fortran_order", "True");
      what = "fortran_order True";
      break;
    case 6:
      n->data.resize(n->data.size() / 2);
      what = "truncated data";
      break;
    case 7: {  // header length beyond the file
      std::string out = build_npy(*n);
      out[8] = '\xff';
      out[9] = '\x7f';
      write_file(p, out);
      return "header length 0x7fff in " + p.filename().string();
    }
    default:
      n->dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(2000, '(') + "), }";
      what = "nested shape tuple";
      break;
  }
  write_file(p, build_npy(*n));
  return what + " in " + p.filename().string();
}

// ------------------------------------------------------------------------------------------------
// Runs and findings

struct RunOutcome {
  std::string label;  // command name (print, run, minify, ...)
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string cwd;
  ProcessResult r;
  int leftovers = 0;
  std::vector<std::string> stray;  // writes outside where the product may write
};

std::string finding_kind(const ProcessResult& r) {
  if (r.timed_out) return "timeout";
  if (r.signal) return "signal " + signal_name(r.signal);
  if (r.exit_code != 0 && r.exit_code != 1 && r.exit_code != 2) return fmt::format("exit {}", r.exit_code);
  return "";
}

std::string status_text(const ProcessResult& r) {
  if (r.timed_out) return fmt::format("timeout after {:.1f}s", r.seconds);
  if (r.signal) return "signal " + signal_name(r.signal);
  return fmt::format("exit {}", r.exit_code);
}

struct FuzzConfig {
  std::string exe;
  std::string corpus;
  long count = 0;
  uint64_t seed = 1;
  long jobs = 1;
  double timeout = 10;
  long memory_mb = 4096;
  fs::path out;
  fs::path run_dir;  // temp dirs of this invocation
  fs::path cache;
  bool keep_temp = false;
};

ProcessSpec base_spec(const FuzzConfig& c, const std::vector<std::string>& argv, const fs::path& cwd) {
  ProcessSpec s;
  s.argv = argv;
  s.cwd = cwd.string();
  s.timeout_s = c.timeout;
  s.memory_limit_mb = c.memory_mb;
  s.env_unset = kReproVars;
  s.env_set["REPRO_CACHE_DIR"] = c.cache.string();
  s.env_set["REPROKIT_EXE"] = c.exe;
  return s;
}

RunOutcome run_one(const FuzzConfig& c, const std::string& label, const std::vector<std::string>& argv, const fs::path& cwd,
                   const fs::path& watch_root, const std::set<fs::path>& writable) {
  RunOutcome o;
  o.label = label;
  o.argv = argv;
  o.cwd = cwd.string();
  ProcessSpec s = base_spec(c, argv, cwd);
  o.env = s.env_set;
  Snapshot before = snapshot(watch_root, writable);
  o.r = reprokit::run_process(s);
  o.leftovers = reap_leftovers();
  o.stray = snapshot_diff(before, snapshot(watch_root, writable));
  return o;
}

// Rewrites the temp paths in argv to where a finding was saved.
std::vector<std::string> rebase(const std::vector<std::string>& argv, const std::string& from, const std::string& to) {
  std::vector<std::string> out;
  for (auto a : argv) {
    replace_all(a, from, to);
    out.push_back(a);
  }
  return out;
}

// What one mutant did: its runs and its description; written as one JSON line by a shard.
json outcome_json(long index, const std::vector<std::string>& mutations, const std::vector<RunOutcome>& runs) {
  json j;
  j["index"] = index;
  j["mutations"] = mutations;
  j["runs"] = json::array();
  for (auto& o : runs) {
    j["runs"].push_back({{"label", o.label},
                         {"argv", o.argv},
                         {"exit", o.r.exit_code},
                         {"signal", o.r.signal},
                         {"timed_out", o.r.timed_out},
                         {"seconds", o.r.seconds},
                         {"stderr_empty", o.r.err.find_first_not_of(" \t\r\n") == std::string::npos},
                         {"stderr_last", last_line(o.r.err)},
                         {"leftovers", o.leftovers},
                         {"stray", o.stray}});
  }
  return j;
}

// Saves a finding (or a stray write) into pending/<index>-<run>/, renamed to findings/NNNN later.
void save_pending(const FuzzConfig& c, const fs::path& pending_dir, long index, size_t run_no, const std::vector<std::string>& mutations,
                  const RunOutcome& o, const fs::path& mutant_root, const fs::path& pristine, const std::string& kind) {
  fs::path d = pending_dir / fmt::format("{:08d}-{}", index, run_no);
  fs::create_directories(d);
  copy_tree(pristine, d / "mutant");
  std::string saved_mutant = (d / "mutant").string();
  json a;
  a["argv"] = o.argv;
  a["cwd"] = o.cwd;
  a["env"] = o.env;
  a["env_unset"] = kReproVars;
  a["timeout_s"] = c.timeout;
  a["memory_limit_mb"] = c.memory_mb;
  a["mutant_dir_during_run"] = mutant_root.string();
  a["rerun_argv"] = rebase(o.argv, mutant_root.string(), saved_mutant);
  a["rerun_cwd"] = rebase({o.cwd}, mutant_root.string(), saved_mutant)[0];
  a["mutations"] = mutations;
  a["mutant_index"] = index;
  a["kind"] = kind;
  write_file(d / "argv.json", dump_json(a) + "\n");
  std::string res;
  res += fmt::format("kind: {}\n", kind);
  res += fmt::format("command: {}\n", o.label);
  res += fmt::format("status: {}\n", status_text(o.r));
  res += fmt::format("exit_code: {}\nsignal: {}\ntimed_out: {}\nseconds: {:.3f}\n", o.r.exit_code, o.r.signal, o.r.timed_out, o.r.seconds);
  res += fmt::format("leftover processes killed: {}\n", o.leftovers);
  res += "mutations:\n";
  for (auto& m : mutations) res += "  - " + m + "\n";
  if (!o.stray.empty()) {
    res += "writes outside the bundle / cwd:\n";
    for (auto& s : o.stray) res += "  - " + s + "\n";
  }
  res += "rerun (paths under mutant/):\n  " + reprokit::shell_quote_command(a["rerun_argv"].get<std::vector<std::string>>()) + "\n";
  res += "---- stderr (tail) ----\n" + tail(o.r.err, 8000) + "\n";
  res += "---- stdout (tail) ----\n" + tail(o.r.out, 2000) + "\n";
  write_file(d / "result.txt", res);
}

// ------------------------------------------------------------------------------------------------
// The rk corpus

struct RkSeeds {
  std::vector<std::pair<std::string, std::string>> files;  // name, text
};

RkSeeds load_rk_seeds() {
  RkSeeds s;
  fs::path ex = fs::path(REPROKIT_SOURCE_DIR) / "examples";
  std::vector<fs::path> paths;
  for (auto& e : fs::directory_iterator(ex))
    if (e.path().extension() == ".rk") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (auto& p : paths) s.files.push_back({p.filename().string(), read_file(p)});
  if (s.files.empty()) throw UsageError("no examples/*.rk under " + ex.string());
  return s;
}

// ------------------------------------------------------------------------------------------------
// The bundle corpus

struct BaseBundle {
  std::string description;
  fs::path dir;
};

std::vector<BaseBundle> make_base_bundles(const FuzzConfig& c, const fs::path& where) {
  struct Recipe {
    std::string model;
    std::vector<std::string> args;
    std::string after;
    std::string level;
    std::string fallback_inject;  // used when the first form yields no bundle
  };
  std::vector<Recipe> recipes = {
      {"mlp.rk", {"--inject", "relu:runtime_error"}, "aot", "2", "tanh:runtime_error"},
      {"mlp.rk", {"--inject", "add:compile_error"}, "aot", "2", ""},
      {"attention.rk", {"--inject", "exp:accuracy"}, "aot", "4", ""},
      {"embedding_classifier.rk", {"--backend", "eager", "--inject", "tanh:runtime_error"}, "aot", "2", ""},
      {"embedding_classifier.rk", {"--inject", "tanh:runtime_error"}, "dynamo", "2", ""},
      {"mixed_precision.rk", {"--inject", "mul:crash"}, "aot", "3", ""},
  };
  std::vector<BaseBundle> bases;
  int k = 0;
  for (auto& rc : recipes) {
    for (int form = 0; form < 2; ++form) {
      std::vector<std::string> args = rc.args;
      if (form == 1) {
        if (rc.fallback_inject.empty()) break;
        for (size_t i = 0; i + 1 < args.size(); ++i)
          if (args[i] == "--inject") args[i + 1] = rc.fallback_inject;
      }
      fs::path cwd = where / fmt::format("base{}", k++);
      fs::create_directories(cwd);
      std::vector<std::string> argv = {c.exe, "run", (fs::path(REPROKIT_SOURCE_DIR) / "examples" / rc.model).string()};
      argv.insert(argv.end(), args.begin(), args.end());
      ProcessSpec s = base_spec(c, argv, cwd);
      s.timeout_s = std::max(60.0, c.timeout);
      s.env_set["REPRO_AFTER"] = rc.after;
      s.env_set["REPRO_LEVEL"] = rc.level;
      s.env_set["REPRO_DIR"] = "out";
      auto r = reprokit::run_process(s);
      reap_leftovers();
      std::string desc = fmt::format("REPRO_AFTER={} REPRO_LEVEL={} reprokit run {} {}", rc.after, rc.level, rc.model, fmt::join(args, " "));
      std::vector<std::string> made;
      for (auto& n : list_dir(cwd / "out"))
        if (fs::exists(cwd / "out" / n / "manifest.json")) made.push_back(n);
      if (made.empty()) {
        fmt::print("  base: {} -> {}, no bundle{}\n", desc, status_text(r),
                   form == 0 && !rc.fallback_inject.empty() ? " (trying the fallback)" : ", skipped");
        continue;
      }
      fmt::print("  base: {} -> {}, bundle {}\n", desc, status_text(r), made[0]);
      bases.push_back({desc, cwd / "out" / made[0]});
      break;
    }
  }
  return bases;
}

const std::vector<std::string> kBundleCommands = {"minify", "analyze", "bisect", "repro", "print"};

std::vector<std::string> bundle_argv(const FuzzConfig& c, const std::string& cmd, const fs::path& B) {
  if (cmd == "minify") return {c.exe, "minify", B.string(), "--jobs", "1", "--timeout", "5"};
  if (cmd == "analyze") return {c.exe, "analyze", B.string()};
  if (cmd == "bisect") return {c.exe, "bisect", B.string(), "--timeout", "5"};
  if (cmd == "repro") return {c.exe, "repro", (B / "original" / "repro.rk").string()};
  return {c.exe, "print", (B / "manifest.json").string()};
}

std::vector<fs::path> files_under(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  for (auto& n : list_dir(dir)) {
    fs::path p = dir / n;
    struct stat st;
    if (lstat_ok(p, st) && S_ISREG(st.st_mode) && (ext.empty() || p.extension() == ext)) out.push_back(p);
  }
  return out;
}

// Applies one JSON-aware mutation to manifest m; returns a description or "" when not applicable.
// abs_name: an absolute path inside the mutant's directory, used where a hostile *name* is
// absolute (the product may write <name>.npy: it must land where the driver watches, not in /tmp).
std::string mutate_manifest_json(json& m, Rng& rng, std::vector<std::string>& raw, const std::string& outside_rel, const std::string& abs_name) {
  std::vector<json::json_pointer> scalars, members;
  collect_pointers(m, json::json_pointer(), scalars, members);
  switch (rng.below(6)) {
    case 0: {
      if (scalars.empty()) return "";
      auto p = rng.pick(scalars);
      json old = m[p];
      json v = hostile_scalar(old, rng, raw);
      m[p] = v;
      std::string shown = v.dump(-1, ' ', false, json::error_handler_t::replace);
      if (v.is_string() && v.get<std::string>().rfind("@@RAW", 0) == 0) shown = raw.back() + " (raw)";
      return fmt::format("manifest {} : {} -> {}", p.to_string(), printable(old.dump(-1, ' ', false, json::error_handler_t::replace), 40),
                         printable(shown, 40));
    }
    case 1: {
      if (members.empty()) return "";
      auto p = rng.pick(members);
      std::string key = p.back();
      auto parent = p.parent_pointer();
      m[parent].erase(key);
      return "manifest delete " + p.to_string();
    }
    case 2: {
      if (!m.contains("inputs") || !m["inputs"].is_array() || m["inputs"].empty()) return "";
      size_t i = rng.below(m["inputs"].size());
      std::vector<std::string> targets = {"../../etc/x",        "/dev/zero", "/tmp/x", outside_rel, "inputs/../../outside/secret.npy", "inputs", "",
                                          "inputs/\xc3\xa9.npy"};
      std::string t = rng.pick(targets);
      m["inputs"][i]["file"] = t;
      return fmt::format("manifest inputs[{}].file -> {}", i, printable(t));
    }
    case 3: {
      static const std::vector<std::string> stages = {"bogus", "", "aot_forward\n", "dynamo ", "../x", "aot_backward", "AOT_FORWARD"};
      static const std::vector<std::string> backends = {"bogus", "", "cuda", "eager", "cpp\n", "../cpp", "aot_eager"};
      json& spec = m["spec"];
      if (!spec.is_object()) spec = json::object();
      switch (rng.below(3)) {
        case 0: spec["stage"] = rng.pick(stages); return "manifest spec.stage -> " + printable(spec["stage"].get<std::string>());
        case 1: spec["backend"] = rng.pick(backends); return "manifest spec.backend -> " + printable(spec["backend"].get<std::string>());
        default: {
          std::vector<json> levels = {json("bogus"), json(0), json(5), json(-1), json(99999999999LL), json(2.5), json("2")};
          m["level"] = rng.pick(levels);
          return "manifest level -> " + m["level"].dump();
        }
      }
    }
    case 4: {
      if (!m.contains("graph") || !m["graph"].contains("nodes") || !m["graph"]["nodes"].is_array() || m["graph"]["nodes"].empty()) return "";
      auto& nodes = m["graph"]["nodes"];
      json& node = nodes[rng.below(nodes.size())];
      if (!node.contains("name") || !node["name"].is_string()) return "";
      std::string from = node["name"].get<std::string>();
      auto names = hostile_json_names();
      std::replace(names.begin(), names.end(), std::string("/tmp/x"), abs_name);
      std::string to = rng.pick(names);
      rename_graph_value(m, from, to);
      return fmt::format("manifest rename value {} -> {}", from, printable(to));
    }
    default: {  // an input name
      if (!m.contains("graph") || !m["graph"].contains("inputs") || !m["graph"]["inputs"].is_array() || m["graph"]["inputs"].empty()) return "";
      auto& ins = m["graph"]["inputs"];
      json& in = ins[rng.below(ins.size())];
      if (!in.contains("name") || !in["name"].is_string()) return "";
      std::string from = in["name"].get<std::string>();
      std::vector<std::string> names = {abs_name, "../../x", "a\nb", "s%n%p", "..", "inputs/../../y"};
      std::string to = rng.pick(names);
      rename_graph_value(m, from, to);
      if (m.contains("inputs") && m["inputs"].is_array())
        for (auto& e : m["inputs"])
          if (e.is_object() && e.value("name", "") == from) e["name"] = to;
      return fmt::format("manifest rename input {} -> {}", from, printable(to));
    }
  }
}

// Builds one bundle mutant. Layout under M (the mutant root):
//   M/c1/c2/cwd        the child's cwd (so ../../x from it stays inside M)
//   M/d1/d2/bundle     the bundle (so ../../x from it stays inside M)
//   M/outside/         files and a directory outside the bundle that symlinks point to
std::vector<std::string> make_bundle_mutant(const BaseBundle& base, const fs::path& M, const std::string& cmd, Rng& rng) {
  std::vector<std::string> log;
  fs::path B = M / "d1" / "d2" / "bundle";
  fs::create_directories(M / "c1" / "c2" / "cwd");
  fs::create_directories(B.parent_path());
  fs::create_directories(M / "outside" / "workdir");
  copy_tree(base.dir, B);
  auto npys = files_under(B / "inputs", ".npy");
  if (!npys.empty()) fs::copy_file(npys[0], M / "outside" / "secret.npy", fs::copy_options::overwrite_existing);
  write_file(M / "outside" / "target.txt", "outside target: must stay untouched\n");
  log.push_back("base: " + base.description);

  size_t n = 1 + rng.below(3);
  // Content edits first, then edits of the file system (a FIFO or directory stops content edits).
  std::vector<int> kinds;
  for (size_t i = 0; i < n; ++i) kinds.push_back(static_cast<int>(rng.below(100)));
  std::sort(kinds.begin(), kinds.end());
  const bool repro = cmd == "repro";
  fs::path manifest = B / "manifest.json";
  fs::path repro_rk = B / "original" / "repro.rk";
  for (int k : kinds) {
    std::string what;
    struct stat st;
    if (k < 55) {  // content: the manifest (or, for repro, the repro file and its spec line)
      if (repro) {
        if (!lstat_ok(repro_rk, st) || !S_ISREG(st.st_mode)) continue;
        std::string t = read_file(repro_rk);
        if (rng.chance(40)) {  // the #! spec line, JSON-aware
          size_t p = t.find("#! spec ");
          if (p != std::string::npos) {
            size_t e = t.find('\n', p);
            try {
              json spec = json::parse(t.substr(p + 8, e == std::string::npos ? std::string::npos : e - p - 8));
              json wrapper = {{"spec", spec}};
              std::vector<std::string> raw;
              std::string w = mutate_manifest_json(wrapper, rng, raw, "../outside/secret.npy", (M / "outside" / "abs" / "x").string());
              std::string s = wrapper.contains("spec") ? dump_with_raw(wrapper["spec"], raw) : "{}";
              s.erase(std::remove(s.begin(), s.end(), '\n'), s.end());
              t.replace(p + 8, e == std::string::npos ? std::string::npos : e - p - 8, s);
              what = "repro.rk spec line: " + (w.empty() ? "no-op" : w);
            } catch (const std::exception& ex) { what = std::string("repro.rk spec line unparsable: ") + ex.what(); }
          }
        }
        if (what.empty()) {
          auto m = mutate_text(t, rng);
          what = "repro.rk: " + fmt::format("{}", fmt::join(m, "; "));
        }
        write_file(repro_rk, t);
      } else {
        if (!lstat_ok(manifest, st) || !S_ISREG(st.st_mode)) continue;
        try {
          json m = json::parse(read_file(manifest));
          std::vector<std::string> raw;
          for (int tries = 0; tries < 5 && what.empty(); ++tries)
            what = mutate_manifest_json(m, rng, raw, "../../../outside/secret.npy", (M / "outside" / "abs" / "x").string());
          write_file(manifest, dump_with_raw(m, raw));
        } catch (const std::exception& ex) { what = std::string("manifest unparsable: ") + ex.what(); }
      }
    } else if (k < 70) {  // npy header or data
      auto files = files_under(repro ? B / "original" / "repro_inputs" : B / "inputs", ".npy");
      if (files.empty()) continue;
      fs::path f = rng.pick(files);
      what = mutate_npy(f, rng);
      // Mostly keep the manifest's checksum in step, so the .npy reader itself gets exercised.
      if (!repro && rng.chance(75) && lstat_ok(manifest, st) && S_ISREG(st.st_mode)) {
        try {
          json m = json::parse(read_file(manifest));
          std::string rel = f.lexically_relative(B).string();
          if (m.contains("inputs") && m["inputs"].is_array())
            for (auto& e : m["inputs"])
              if (e.is_object() && e.value("file", "") == rel) e["checksum"] = product_checksum(read_file(f));
          write_file(manifest, dump_json(m));
          what += " (manifest checksum updated)";
        } catch (const std::exception&) {}
      }
    } else if (k < 78) {  // an input file becomes a symlink out of the bundle
      auto files = files_under(repro ? B / "original" / "repro_inputs" : B / "inputs", ".npy");
      if (files.empty()) continue;
      fs::path f = rng.pick(files);
      fs::remove(f);
      std::string target = rng.chance(50) ? "/dev/zero" : (M / "outside" / "secret.npy").lexically_relative(f.parent_path()).string();
      fs::create_symlink(target, f);
      what = fmt::format("{} -> symlink to {}", f.lexically_relative(B).string(), target);
    } else if (k < 86) {  // symlinks out of the bundle where the product writes
      static const std::vector<std::string> where = {"minify_work",  "report.json.tmp", "repro.rk.tmp", "report.json",
                                                     "repro_inputs", "analyze.json",    "bisect.json"};
      std::string w = rng.pick(where);
      bool dir = w == "minify_work" || w == "repro_inputs";
      fs::path target = dir ? M / "outside" / "workdir" : M / "outside" / "target.txt";
      fs::remove_all(B / w);
      std::string rel = target.lexically_relative(B).string();
      fs::create_symlink(rel, B / w);
      what = fmt::format("{} -> symlink to {}", w, rel);
    } else if (k < 93) {  // a FIFO
      std::vector<fs::path> cands = {manifest, repro_rk};
      for (auto& f : files_under(B / "inputs", ".npy")) cands.push_back(f);
      for (auto& f : files_under(B / "original" / "repro_inputs", ".npy")) cands.push_back(f);
      fs::path f = rng.pick(cands);
      fs::remove_all(f);
      ::mkfifo(f.c_str(), 0644);
      what = f.lexically_relative(B).string() + " -> FIFO";
    } else {  // a directory where a file was, or a symlink loop
      std::vector<fs::path> cands = {manifest, repro_rk};
      for (auto& f : files_under(B / "inputs", ".npy")) cands.push_back(f);
      fs::path f = rng.pick(cands);
      fs::remove_all(f);
      if (rng.chance(70)) {
        fs::create_directory(f);
        what = f.lexically_relative(B).string() + " -> directory";
      } else {
        fs::create_symlink(f.filename(), f);
        what = f.lexically_relative(B).string() + " -> symlink loop";
      }
    }
    if (!what.empty()) log.push_back(what);
  }
  return log;
}

// ------------------------------------------------------------------------------------------------
// The fuzz mode

struct MutantResult {
  long index;
  std::vector<std::string> mutations;
  std::vector<RunOutcome> runs;
};

// Runs mutants index = shard, shard + shards, ... < count; appends one JSON line per mutant.
void run_shard(const FuzzConfig& c, const RkSeeds& rk, const std::vector<BaseBundle>& bases, long shard, long shards, const fs::path& results_file,
               const fs::path& pending_dir) {
  std::ofstream results(results_file, std::ios::app);
  for (long i = shard; i < c.count; i += shards) {
    Rng rng(mix_seed(c.seed, static_cast<uint64_t>(i)));
    fs::path M = c.run_dir / fmt::format("m{:08d}", i);
    fs::path P = c.run_dir / fmt::format("p{:08d}", i);  // pristine copy, saved with a finding
    fs::create_directories(M);
    MutantResult mr{i, {}, {}};
    try {
      if (c.corpus == "rk") {
        auto& [name, text] = rk.files[rng.below(rk.files.size())];
        std::string t = text;
        mr.mutations.push_back("seed: examples/" + name);
        for (auto& m : mutate_text(t, rng)) mr.mutations.push_back(m);
        fs::path f = M / "model.rk";
        write_file(f, t);
        copy_tree(M, P);
        mr.runs.push_back(run_one(c, "print", {c.exe, "print", f.string()}, M, M, {}));
        if (i % 10 == 0) mr.runs.push_back(run_one(c, "run", {c.exe, "run", f.string(), "--backend", "eager"}, M, M, {}));
      } else {
        const std::string& cmd = kBundleCommands[static_cast<size_t>(i) % kBundleCommands.size()];
        const BaseBundle& base = bases[rng.below(bases.size())];
        mr.mutations = make_bundle_mutant(base, M, cmd, rng);
        copy_tree(M, P);
        fs::path B = M / "d1" / "d2" / "bundle";
        mr.runs.push_back(run_one(c, cmd, bundle_argv(c, cmd, B), M / "c1" / "c2" / "cwd", M, {B}));
      }
    } catch (const std::exception& ex) { mr.mutations.push_back(std::string("driver error while building or running the mutant: ") + ex.what()); }
    bool keep = false;
    for (size_t r = 0; r < mr.runs.size(); ++r) {
      auto& o = mr.runs[r];
      std::string kind = finding_kind(o.r);
      if (kind.empty() && !o.stray.empty()) kind = "stray-writes";
      if (kind.empty() && o.leftovers > 0) kind = "leftover-processes";
      if (!kind.empty()) {
        save_pending(c, pending_dir, i, r, mr.mutations, o, M, P, kind);
        keep = true;
      }
    }
    results << outcome_json(i, mr.mutations, mr.runs).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    results.flush();
    if (!c.keep_temp || !keep) {
      remove_tree(M);
      remove_tree(P);
    }
  }
}

int next_finding_number(const fs::path& findings) {
  int mx = 0;
  for (auto& n : list_dir(findings)) {
    try {
      mx = std::max(mx, std::stoi(n));
    } catch (...) {}
  }
  return mx + 1;
}

int cmd_fuzz(const Args& a) {
  FuzzConfig c;
  if (!a.opts.count("--exe")) throw UsageError("fuzz needs --exe PATH");
  if (!a.opts.count("--corpus")) throw UsageError("fuzz needs --corpus rk|bundle");
  if (!a.opts.count("--count")) throw UsageError("fuzz needs --count N");
  c.exe = fs::absolute(a.opts.at("--exe")).string();
  if (access(c.exe.c_str(), X_OK) != 0) throw UsageError("--exe " + c.exe + ": not an executable file");
  c.corpus = a.opts.at("--corpus");
  if (c.corpus != "rk" && c.corpus != "bundle") throw UsageError("--corpus must be rk or bundle, got '" + c.corpus + "'");
  c.count = to_long(a.opts.at("--count"), "--count", 0, 100000000);
  if (a.opts.count("--seed")) c.seed = static_cast<uint64_t>(to_long(a.opts.at("--seed"), "--seed", 0, LONG_MAX));
  if (a.opts.count("--jobs")) c.jobs = to_long(a.opts.at("--jobs"), "--jobs", 1, 256);
  if (a.opts.count("--timeout")) c.timeout = to_double(a.opts.at("--timeout"), "--timeout");
  if (a.opts.count("--memory-limit")) c.memory_mb = to_long(a.opts.at("--memory-limit"), "--memory-limit", 0, 1 << 22);
  c.keep_temp = a.flags.count("--keep-temp") > 0;
  if (a.opts.count("--out")) c.out = fs::absolute(a.opts.at("--out"));
  else c.out = make_temp_dir(fs::temp_directory_path(), "rk-fuzz-");
  fs::create_directories(c.out / "findings");
  c.cache = c.out / "cache";
  fs::create_directories(c.cache);
  c.run_dir = make_temp_dir(c.out / "work", fmt::format("{}-seed{}-", c.corpus, c.seed));
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  fmt::print("fuzz: {} corpus, {} mutants, seed {}, jobs {}, per-run limit {}s, memory limit {} MB\n", c.corpus, c.count, c.seed, c.jobs, c.timeout,
             c.memory_mb);
  fmt::print("fuzz: exe {}\nfuzz: out {}\n", c.exe, c.out.string());
  std::fflush(stdout);

  RkSeeds rk;
  std::vector<BaseBundle> bases;
  if (c.corpus == "rk") {
    rk = load_rk_seeds();
    fmt::print("fuzz: {} seed models from {}/examples\n", rk.files.size(), REPROKIT_SOURCE_DIR);
  } else {
    fmt::print("fuzz: making base bundles\n");
    std::fflush(stdout);
    bases = make_base_bundles(c, c.run_dir / "bases");
    if (bases.empty()) {
      fmt::print(stderr, "fuzz: no base bundle could be made with {}\n", c.exe);
      return 2;
    }
  }
  std::fflush(stdout);

  fs::path pending = c.run_dir / "pending";
  fs::create_directories(pending);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<fs::path> result_files;
  if (c.jobs == 1) {
    result_files.push_back(c.run_dir / "results-0.jsonl");
    run_shard(c, rk, bases, 0, 1, result_files[0], pending);
  } else {
    // Each shard is a fresh fuzz_driver (mode shard) started through src/process, reading what it
    // runs from a plan file; each is the subreaper of its own runs.
    json plan = {{"exe", c.exe},
                 {"corpus", c.corpus},
                 {"count", c.count},
                 {"seed", c.seed},
                 {"jobs", c.jobs},
                 {"timeout", c.timeout},
                 {"memory_mb", c.memory_mb},
                 {"out", c.out.string()},
                 {"run_dir", c.run_dir.string()},
                 {"cache", c.cache.string()},
                 {"keep_temp", c.keep_temp},
                 {"pending", pending.string()},
                 {"bases", json::array()}};
    for (const BaseBundle& b : bases) plan["bases"].push_back({{"description", b.description}, {"dir", b.dir.string()}});
    const fs::path plan_file = c.run_dir / "shards.json";
    write_file(plan_file, dump_json(plan));
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    std::vector<std::future<ProcessResult>> shards;
    for (long k = 0; k < c.jobs; ++k) {
      result_files.push_back(c.run_dir / fmt::format("results-{}.jsonl", k));
      std::fflush(stdout);
      ProcessSpec s;
      s.argv = {self, "shard", "--plan", plan_file.string(), "--shard", std::to_string(k)};
      s.inherit_output = true;
      shards.push_back(std::async(std::launch::async, [s] { return reprokit::run_process(s); }));
    }
    for (auto& f : shards) f.get();
    reap_leftovers();
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Aggregate.
  std::vector<json> mutants;
  for (auto& f : result_files) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) mutants.push_back(json::parse(line));
  }
  std::sort(mutants.begin(), mutants.end(), [](const json& x, const json& y) { return x["index"] < y["index"]; });
  long runs = 0, timeouts = 0, empty_exit2 = 0, leftover_runs = 0, stray_runs = 0, findings = 0;
  std::map<int, long> by_exit;
  std::map<int, long> by_signal;
  std::map<std::string, std::map<std::string, long>> by_command;  // command -> status -> count
  std::map<std::string, std::pair<long, json>> finding_kinds;     // "kind [command]" -> count, example
  json empty_exit2_example, stray_example, leftover_example;
  for (auto& m : mutants) {
    for (auto& r : m["runs"]) {
      ++runs;
      ProcessResult pr;
      pr.exit_code = r["exit"];
      pr.signal = r["signal"];
      pr.timed_out = r["timed_out"];
      pr.seconds = r["seconds"];
      std::string label = r["label"];
      if (pr.timed_out) ++timeouts;
      else if (pr.signal) ++by_signal[pr.signal];
      else ++by_exit[pr.exit_code];
      by_command[label][status_text(pr).substr(0, pr.timed_out ? 7 : std::string::npos)]++;
      std::string kind = finding_kind(pr);
      if (!kind.empty()) {
        ++findings;
        auto& slot = finding_kinds[kind + " [" + label + "]"];
        if (slot.first++ == 0) slot.second = r, slot.second["mutations"] = m["mutations"];
      }
      if (!pr.timed_out && !pr.signal && pr.exit_code == 2 && r["stderr_empty"].get<bool>()) {
        if (empty_exit2++ == 0) empty_exit2_example = r;
      }
      if (!r["stray"].empty() && stray_runs++ == 0) stray_example = r, stray_example["mutations"] = m["mutations"];
      if (r["leftovers"].get<int>() > 0 && leftover_runs++ == 0) leftover_example = r;
    }
  }
  // Number the saved findings in mutant order.
  int next = next_finding_number(c.out / "findings");
  int first = next;
  for (auto& n : list_dir(pending)) {
    fs::path to = c.out / "findings" / fmt::format("{:04d}", next++);
    fs::rename(pending / n, to);
    for (const char* f : {"argv.json", "result.txt"}) {  // the rerun paths name the final place
      std::string t = read_file(to / f);
      replace_all(t, (pending / n).string(), to.string());
      write_file(to / f, t);
    }
  }

  fmt::print("\n==== fuzz summary: corpus {}, seed {}, exe {}\n", c.corpus, c.seed, c.exe);
  fmt::print("mutants run: {}   runs: {}   wall: {:.1f}s   runs/second: {:.2f}\n", mutants.size(), runs, wall,
             wall > 0 ? static_cast<double>(runs) / wall : 0.0);
  std::string exits;
  for (auto& [e, n] : by_exit) exits += fmt::format("  exit {}: {}", e, n);
  fmt::print("runs per exit status:{}\n", exits.empty() ? " (none)" : exits);
  std::string sigs;
  for (auto& [s, n] : by_signal) sigs += fmt::format("  {}: {}", signal_name(s), n);
  fmt::print("signals:{}\ntimeouts: {}\n", sigs.empty() ? " none" : sigs, timeouts);
  for (auto& [cmd, st] : by_command) {
    std::string line;
    for (auto& [s, n] : st) line += fmt::format("  {}: {}", s, n);
    fmt::print("  {:8}{}\n", cmd, line);
  }
  fmt::print("findings: {}", findings);
  if (next > first)
    fmt::print("   saved: {}/findings/{:04d} .. {:04d} ({} dirs: findings, plus runs that wrote outside or left processes)", c.out.string(), first,
               next - 1, next - first);
  fmt::print("\n");
  for (auto& [kind, ex] : finding_kinds) {
    fmt::print("  {} x{}\n    e.g. {}\n    stderr: {}\n    mutations: {}\n", kind, ex.first,
               reprokit::shell_quote_command(ex.second["argv"].get<std::vector<std::string>>()), ex.second["stderr_last"].get<std::string>(),
               printable(fmt::format("{}", fmt::join(ex.second["mutations"].get<std::vector<std::string>>(), "; ")), 300));
  }
  fmt::print("info: exit-2 runs with an empty stderr: {}\n", empty_exit2);
  if (empty_exit2) fmt::print("    e.g. {}\n", reprokit::shell_quote_command(empty_exit2_example["argv"].get<std::vector<std::string>>()));
  fmt::print("info: runs that wrote outside the bundle / their cwd: {}\n", stray_runs);
  if (stray_runs)
    fmt::print("    e.g. {}\n    {}\n    mutations: {}\n", reprokit::shell_quote_command(stray_example["argv"].get<std::vector<std::string>>()),
               printable(stray_example["stray"][0].get<std::string>(), 200),
               printable(fmt::format("{}", fmt::join(stray_example["mutations"].get<std::vector<std::string>>(), "; ")), 300));
  fmt::print("info: runs that left processes running (killed): {}\n", leftover_runs);
  if (leftover_runs) fmt::print("    e.g. {}\n", reprokit::shell_quote_command(leftover_example["argv"].get<std::vector<std::string>>()));

  json summary = {{"corpus", c.corpus},
                  {"seed", c.seed},
                  {"count", c.count},
                  {"mutants_run", mutants.size()},
                  {"runs", runs},
                  {"wall_s", wall},
                  {"timeouts", timeouts},
                  {"findings", findings},
                  {"exit2_empty_stderr", empty_exit2},
                  {"stray_write_runs", stray_runs},
                  {"leftover_runs", leftover_runs}};
  for (auto& [e, n] : by_exit) summary["exits"][std::to_string(e)] = n;
  for (auto& [s, n] : by_signal) summary["signals"][signal_name(s)] = n;
  for (auto& [k, ex] : finding_kinds) summary["finding_kinds"][k] = {{"count", ex.first}, {"example", ex.second}};
  write_file(c.out / fmt::format("summary-{}-seed{}.json", c.corpus, c.seed), dump_json(summary) + "\n");
  std::fflush(stdout);

  if (!c.keep_temp) remove_tree(c.run_dir);
  std::error_code ec;
  fs::remove(c.out / "work", ec);  // only when empty
  return findings == 0 ? 0 : 1;
}

// ------------------------------------------------------------------------------------------------
// The replay mode

std::string substitute(std::string s, const std::map<std::string, std::string>& vars) {
  for (auto& [k, v] : vars) replace_all(s, "{" + k + "}", v);
  return s;
}

fs::path case_path(const std::string& p, const fs::path& case_copy, const std::map<std::string, std::string>& vars) {
  fs::path q = substitute(p, vars);
  return q.is_absolute() ? q : case_copy / q;
}

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_string()) out.push_back(j.get<std::string>());
  else if (j.is_array())
    for (auto& e : j) out.push_back(e.get<std::string>());
  return out;
}

std::string npy_header_dict(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string sh = "(";
  for (size_t i = 0; i < shape.size(); ++i) sh += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) sh += ",";
  sh += ")";
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + sh + ", }";
}

// Setup action {"npy": {"path", "dtype": "<i8"|"<f4"|"<f8"|"<i4", "shape": [...], "values": [...] (cycled)}}
// or {"npy": {"path", "header": "<raw dict text>", "data_bytes": N}} for a hostile header.
void write_npy_action(const json& spec, const fs::path& path) {
  Npy n;
  n.magic_version = std::string("\x93NUMPY\x01\x00", 8);
  if (spec.contains("header")) {
    n.dict = spec["header"].get<std::string>();
    n.data = std::string(spec.value("data_bytes", 0), '\0');
  } else {
    std::string dtype = spec.value("dtype", "<f4");
    std::vector<int64_t> shape = spec["shape"].get<std::vector<int64_t>>();
    n.dict = npy_header_dict(dtype, shape);
    int64_t count = 1;
    for (auto d : shape) count *= d;
    const json& vals = spec["values"];
    for (int64_t i = 0; i < count; ++i) {
      const json& v = vals[static_cast<size_t>(i) % vals.size()];
      char buf[8];
      size_t w = 0;
      if (dtype == "<i8") {
        int64_t x = v.get<int64_t>();
        std::memcpy(buf, &x, 8), w = 8;
      } else if (dtype == "<i4") {
        int32_t x = v.get<int32_t>();
        std::memcpy(buf, &x, 4), w = 4;
      } else if (dtype == "<f8") {
        double x = v.get<double>();
        std::memcpy(buf, &x, 8), w = 8;
      } else {
        float x = v.get<float>();
        std::memcpy(buf, &x, 4), w = 4;
      }
      n.data.append(buf, w);
    }
  }
  fs::create_directories(path.parent_path());
  write_file(path, build_npy(n));
}

// Reads a little-endian int64 .npy; returns the values or an error text.
std::variant<std::vector<int64_t>, std::string> read_npy_i64(const fs::path& p) {
  struct stat st;
  if (!lstat_ok(p, st)) return std::string("missing");
  if (!S_ISREG(st.st_mode)) return std::string("not a regular file");
  auto n = parse_npy(read_file(p));
  if (!n) return std::string("not a .npy file");
  if (n->dict.find("'<i8'") == std::string::npos) return "dtype is not <i8: " + n->dict;
  if (n->data.size() % 8) return std::string("data is not a multiple of 8 bytes");
  std::vector<int64_t> v(n->data.size() / 8);
  std::memcpy(v.data(), n->data.data(), n->data.size());
  return v;
}

// True when p can still be listed (we run as root: chmod 000 does not stop root).
bool still_readable(const fs::path& p) {
  DIR* d = opendir(p.c_str());
  if (d) {
    closedir(d);
    return true;
  }
  int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  return false;
}

struct CaseResult {
  std::string name;
  std::string verdict;  // PASS FAIL SKIP
  std::vector<std::string> reasons;
  std::string observed;
};

CaseResult replay_case(const std::string& exe, const fs::path& case_dir, bool keep, bool verbose) {
  CaseResult cr;
  cr.name = case_dir.filename().string();
  json cj = json::parse(read_file(case_dir / "case.json"));
  // The temp name must not contain the case name: stderr checks look for names in messages.
  fs::path tmp = make_temp_dir(fs::temp_directory_path(), "rk-replay-");
  fs::path cp = tmp / "case";
  fs::create_directories(cp);
  for (auto& n : list_dir(case_dir))
    if (n != "case.json") copy_tree(case_dir / n, cp / n);
  fs::create_directories(tmp / "outside");
  fs::create_directories(tmp / "cache");
  fs::create_directories(tmp / "cwd");
  std::map<std::string, std::string> vars = {
      {"exe", exe}, {"case", cp.string()}, {"outside", (tmp / "outside").string()}, {"tmp", tmp.string()}, {"source", REPROKIT_SOURCE_DIR}};
  auto finish = [&]() {
    if (!keep) remove_tree(tmp);
    else cr.reasons.push_back("kept " + tmp.string());
    return cr;
  };
  try {
    // Setup actions.
    for (auto& act : cj.value("setup", json::array())) {
      if (act.contains("mkfifo")) {
        fs::path p = case_path(act["mkfifo"], cp, vars);
        fs::create_directories(p.parent_path());
        fs::remove_all(p);
        if (::mkfifo(p.c_str(), 0644) != 0) throw std::runtime_error("mkfifo " + p.string() + ": " + strerror(errno));
      } else if (act.contains("symlink")) {
        fs::path link = case_path(act["symlink"][0], cp, vars);
        std::string target = substitute(act["symlink"][1], vars);
        fs::create_directories(link.parent_path());
        fs::remove_all(link);
        fs::create_symlink(target, link);
      } else if (act.contains("nest")) {
        const json& nj = act["nest"];
        fs::path p = case_path(nj[0], cp, vars);
        size_t depth = nj[1].get<size_t>();
        std::string prefix = nj.size() > 2 ? nj[2].get<std::string>() : "";
        std::string suffix = nj.size() > 3 ? nj[3].get<std::string>() : "";
        std::string open = nj.size() > 4 ? nj[4].get<std::string>() : "[";
        std::string body;
        body.reserve(depth * open.size());
        for (size_t i = 0; i < depth; ++i) body += open;
        fs::create_directories(p.parent_path());
        write_file(p, prefix + body + suffix);
      } else if (act.contains("mkdir")) {
        fs::path p = case_path(act["mkdir"], cp, vars);
        fs::remove_all(p);
        fs::create_directories(p);
      } else if (act.contains("write")) {
        fs::path p = case_path(act["write"][0], cp, vars);
        fs::create_directories(p.parent_path());
        write_file(p, act["write"][1].get<std::string>());
      } else if (act.contains("npy")) {
        write_npy_action(act["npy"], case_path(act["npy"]["path"], cp, vars));
      } else if (act.contains("chmod")) {
        fs::path p = case_path(act["chmod"][0], cp, vars);
        mode_t mode = static_cast<mode_t>(std::stoul(act["chmod"][1].get<std::string>(), nullptr, 8));
        if (::chmod(p.c_str(), mode) != 0) throw std::runtime_error("chmod " + p.string() + ": " + strerror(errno));
        if (act.value("skip_if_still_readable", false) && still_readable(p)) {
          cr.verdict = "SKIP";
          cr.reasons.push_back(fmt::format("chmod {} does not make {} unreadable here (running as uid {}); case not meaningful",
                                           act["chmod"][1].get<std::string>(), act["chmod"][0].get<std::string>(), getuid()));
          return finish();
        }
      } else if (act.contains("copy")) {
        fs::path from = case_path(act["copy"][0], cp, vars), to = case_path(act["copy"][1], cp, vars);
        fs::create_directories(to.parent_path());
        fs::copy_file(from, to, fs::copy_options::overwrite_existing);
      } else if (act.contains("remove")) {
        fs::remove_all(case_path(act["remove"], cp, vars));
      } else {
        throw std::runtime_error("unknown setup action " + act.dump());
      }
    }
    // Untouched files: their state now must equal their state after the run.
    std::vector<std::pair<fs::path, Snapshot>> untouched;
    for (auto& u : string_list(cj.value("untouched", json::array()))) {
      fs::path p = case_path(u, cp, vars);
      untouched.push_back({p, snapshot(p)});
    }
    ProcessSpec s;
    for (auto& a : cj.at("argv")) s.argv.push_back(substitute(a.get<std::string>(), vars));
    s.cwd = case_path(cj.value("cwd", "{tmp}/cwd"), cp, vars).string();
    s.timeout_s = cj.value("timeout", 20.0);
    s.memory_limit_mb = cj.value("memory_limit_mb", 4096L);
    s.env_unset = kReproVars;
    s.env_set["REPRO_CACHE_DIR"] = (tmp / "cache").string();
    s.env_set["REPROKIT_EXE"] = exe;
    const json env = cj.value("env", json::object());
    for (auto& [k, v] : env.items()) s.env_set[k] = substitute(v.get<std::string>(), vars);
    if (verbose) fmt::print("  $ {}\n", reprokit::shell_quote_command(s.argv, s.env_set));
    ProcessResult r = reprokit::run_process(s);
    int leftovers = reap_leftovers();
    cr.observed = status_text(r) + fmt::format(" ({:.1f}s)", r.seconds) + "; stderr: " + printable(first_line(r.err), 220);

    // Checks.
    std::vector<int> expect_exit;
    if (cj.contains("expect_exit")) {
      if (cj["expect_exit"].is_array()) expect_exit = cj["expect_exit"].get<std::vector<int>>();
      else expect_exit.push_back(cj["expect_exit"].get<int>());
    }
    if (r.timed_out) cr.reasons.push_back(fmt::format("timed out after {}s", s.timeout_s));
    else if (r.signal) cr.reasons.push_back("killed by " + signal_name(r.signal));
    else if (!expect_exit.empty() && std::find(expect_exit.begin(), expect_exit.end(), r.exit_code) == expect_exit.end())
      cr.reasons.push_back(fmt::format("exit {} (expected {})", r.exit_code, fmt::join(expect_exit, " or ")));
    if (!r.timed_out && !r.signal && r.exit_code == 2 && r.err.find_first_not_of(" \t\r\n") == std::string::npos)
      cr.reasons.push_back("exit 2 with an empty stderr");
    std::string err_l = lower(r.err);
    bool ran = !r.timed_out && !r.signal;
    if (ran) {
      for (auto& want : string_list(cj.value("expect_stderr", json::array())))
        if (err_l.find(lower(want)) == std::string::npos) cr.reasons.push_back("stderr lacks '" + want + "'");
      auto any = string_list(cj.value("expect_stderr_any", json::array()));
      if (!any.empty() && std::none_of(any.begin(), any.end(), [&](const std::string& w) { return err_l.find(lower(w)) != std::string::npos; }))
        cr.reasons.push_back(fmt::format("stderr has none of '{}'", fmt::join(any, "' '")));
      for (auto& bad : string_list(cj.value("expect_stderr_not", json::array())))
        if (err_l.find(lower(bad)) != std::string::npos) cr.reasons.push_back("stderr contains '" + bad + "'");
      // {"expect_stderr_if_exit": {"2": ["text", ...]}}: required only when the run exits with that status.
      const json if_exit = cj.value("expect_stderr_if_exit", json::object());
      for (auto& [code, wants] : if_exit.items())
        if (std::to_string(r.exit_code) == code)
          for (auto& want : string_list(wants))
            if (err_l.find(lower(want)) == std::string::npos) cr.reasons.push_back(fmt::format("exit {} but stderr lacks '{}'", code, want));
      for (auto& want : string_list(cj.value("expect_stdout", json::array())))
        if (lower(r.out).find(lower(want)) == std::string::npos) cr.reasons.push_back("stdout lacks '" + want + "'");
    }
    for (auto& [p, before] : untouched) {
      auto d = snapshot_diff(before, snapshot(p));
      if (d.empty()) continue;
      cr.reasons.push_back(fmt::format("{} was touched: {}", p.string(), fmt::join(d, "; ")));
      // Something the run created where nothing was (e.g. /tmp/x.npy) is removed again.
      if (before.empty()) {
        remove_tree(p);
        cr.reasons.push_back("(removed " + p.string() + ", which the run created)");
      }
    }
    if (cj.contains("expect_npy_i64") && ran) {
      const json& e = cj["expect_npy_i64"];
      auto got = read_npy_i64(case_path(e["path"], cp, vars));
      auto want = e["values"].get<std::vector<int64_t>>();
      if (auto* err = std::get_if<std::string>(&got)) cr.reasons.push_back(fmt::format("{}: {}", e["path"].get<std::string>(), *err));
      else if (std::get<std::vector<int64_t>>(got) != want)
        cr.reasons.push_back(fmt::format("{} holds [{}], expected [{}]", e["path"].get<std::string>(),
                                         fmt::join(std::get<std::vector<int64_t>>(got), ", "), fmt::join(want, ", ")));
    }
    if (leftovers) cr.reasons.push_back(fmt::format("left {} process(es) running", leftovers));
    cr.verdict = cr.reasons.empty() ? "PASS" : "FAIL";
    if (verbose && !r.err.empty()) fmt::print("  stderr:\n{}\n", tail(r.err, 2000));
  } catch (const std::exception& ex) {
    cr.verdict = "FAIL";
    cr.reasons.push_back(std::string("case error: ") + ex.what());
  }
  return finish();
}

int cmd_replay(const Args& a) {
  if (!a.opts.count("--exe")) throw UsageError("replay needs --exe PATH");
  if (!a.opts.count("--corpus-dir")) throw UsageError("replay needs --corpus-dir DIR");
  std::string exe = fs::absolute(a.opts.at("--exe")).string();
  if (access(exe.c_str(), X_OK) != 0) throw UsageError("--exe " + exe + ": not an executable file");
  fs::path dir = a.opts.at("--corpus-dir");
  if (!fs::is_directory(dir)) throw UsageError("--corpus-dir " + dir.string() + ": not a directory");
  std::set<std::string> only;
  if (a.opts.count("--only")) {
    std::stringstream ss(a.opts.at("--only"));
    std::string n;
    while (std::getline(ss, n, ',')) only.insert(n);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int pass = 0, fail = 0, skip = 0;
  std::vector<std::string> failed;
  for (auto& n : list_dir(dir)) {
    if (!fs::exists(dir / n / "case.json")) continue;
    if (!only.empty() && !only.count(n)) continue;
    CaseResult cr = replay_case(exe, dir / n, a.flags.count("--keep-temp") > 0, a.flags.count("--verbose") > 0);
    if (cr.verdict == "PASS") ++pass;
    else if (cr.verdict == "SKIP") ++skip;
    else ++fail, failed.push_back(n);
    fmt::print("{} {}\n", cr.verdict, cr.name);
    if (!cr.observed.empty()) fmt::print("    observed: {}\n", cr.observed);
    for (auto& r : cr.reasons) fmt::print("    {}\n", printable(r, 400));
    std::fflush(stdout);
  }
  fmt::print("\nreplay: {} passed, {} failed, {} skipped ({} cases)\n", pass, fail, skip, pass + fail + skip);
  if (!failed.empty()) fmt::print("failed: {}\n", fmt::join(failed, " "));
  return fail == 0 ? 0 : 1;
}

// One shard of `fuzz --jobs J`, as cmd_fuzz starts it: the plan it wrote, and this shard's number.
int cmd_shard(const Args& a) {
  if (!a.opts.count("--plan") || !a.opts.count("--shard")) throw UsageError("shard needs --plan FILE --shard K");
  const json plan = json::parse(read_file(a.opts.at("--plan")));
  FuzzConfig c;
  c.exe = plan.at("exe");
  c.corpus = plan.at("corpus");
  c.count = plan.at("count");
  c.seed = plan.at("seed");
  c.jobs = plan.at("jobs");
  c.timeout = plan.at("timeout");
  c.memory_mb = plan.at("memory_mb");
  c.out = plan.at("out").get<std::string>();
  c.run_dir = plan.at("run_dir").get<std::string>();
  c.cache = plan.at("cache").get<std::string>();
  c.keep_temp = plan.at("keep_temp");
  const long k = to_long(a.opts.at("--shard"), "--shard", 0, c.jobs - 1);
  RkSeeds rk;
  if (c.corpus == "rk") rk = load_rk_seeds();
  std::vector<BaseBundle> bases;
  for (const auto& b : plan.at("bases")) bases.push_back({b.at("description").get<std::string>(), b.at("dir").get<std::string>()});
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  try {
    run_shard(c, rk, bases, k, c.jobs, c.run_dir / fmt::format("results-{}.jsonl", k), plan.at("pending").get<std::string>());
  } catch (const std::exception& ex) {
    fmt::print(stderr, "fuzz shard {}: {}\n", k, ex.what());
    return 3;
  }
  return 0;
}

void usage(FILE* to) {
  fmt::print(to,
             "usage: fuzz_driver fuzz --exe PATH --corpus rk|bundle --count N [--seed S] [--jobs J] [--timeout SEC]\n"
             "                        [--out DIR] [--memory-limit MB] [--keep-temp]\n"
             "       fuzz_driver replay --exe PATH --corpus-dir DIR [--only NAME,...] [--keep-temp] [--verbose]\n");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
      usage(stdout);
      return 0;
    }
    Args a = parse_args(
        argc, argv,
        {"--exe", "--corpus", "--count", "--seed", "--jobs", "--timeout", "--out", "--memory-limit", "--corpus-dir", "--only", "--plan", "--shard"},
        {"--keep-temp", "--verbose"});
    if (a.mode == "fuzz") return cmd_fuzz(a);
    if (a.mode == "replay") return cmd_replay(a);
    if (a.mode == "shard") return cmd_shard(a);  // started by fuzz --jobs J
    throw UsageError("unknown mode '" + a.mode + "' (fuzz or replay)");
  } catch (const UsageError& e) {
    fmt::print(stderr, "fuzz_driver: {}\n", e.what());
    usage(stderr);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fuzz_driver: internal error: {}\n", e.what());
    return 3;
  }
}
