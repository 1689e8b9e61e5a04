// Files as untrusted input and as output that must land where it belongs. Reads take regular
// files only (never a FIFO, device or directory, which would hang or mislead) up to a size limit.
// A Dir resolves paths below it without following symlinks, so nothing read or written through
// it leaves it, and writes go to a unique temporary file renamed into place.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace reprokit {

constexpr size_t kMaxTextFileBytes = size_t{256} << 20;  // .rk, .json, manifests
constexpr size_t kMaxDataFileBytes = size_t{17} << 30;   // .npy (the tensor size limit, in f64)

// The contents of the regular file at `path` (symlinks in `path` are followed: the user named
// it). UserError naming the path when it is missing, unreadable, not a regular file, a symlink
// loop or larger than max_bytes.
std::string read_file(const std::string& path, size_t max_bytes);

class Dir {
 public:
  // Opens an existing directory (following symlinks in `path`: the user named it).
  static Dir open(const std::string& path);
  // Creates `path` (and its parents) when missing, then opens it.
  static Dir create(const std::string& path);
  Dir(Dir&& o) noexcept;
  Dir& operator=(Dir&& o) noexcept;
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  ~Dir();

  // A directory below this one. `rel` is relative, without "..", and no component of it may be
  // a symlink; with create, missing components are made. UserError otherwise.
  Dir sub(const std::string& rel, bool create = false) const;
  // A regular file below this one, read as read_file does but without following any symlink.
  std::string read(const std::string& rel, size_t max_bytes) const;
  // Whether `rel` names anything below this one (a symlink counts as itself, not its target).
  bool exists(const std::string& rel) const;
  bool is_dir(const std::string& rel) const;
  // Writes `name` (a plain file name) atomically: a new temporary file in this directory, renamed
  // over `name` (a symlink there is replaced, never followed). UserError naming the path on failure.
  void write(const std::string& name, std::string_view data, bool executable = false) const;
  // Creates `name` only if nothing has that name; false when something does.
  bool write_new(const std::string& name, std::string_view data) const;
  // Makes `name` (a new name here) a hard link to the regular file `store_name` of `store` when
  // that file holds exactly `data`, so a large file written twice is stored once; false, with
  // nothing done, when it differs, is not a regular file, or the file system refuses the link.
  // The link is made to the file that was compared, even if `store_name` changes meanwhile; the
  // file becomes read-only, so writing it in place fails rather than changing both names.
  bool link_if_same(const std::string& name, std::string_view data, const Dir& store, const std::string& store_name) const;
  // Creates the directory `name` only if nothing has that name; false when something does.
  bool make_new_dir(const std::string& name) const;
  void rename(const std::string& from, const std::string& to) const;  // within this directory
  void remove_file(const std::string& name) const;                    // a no-op when missing
  void remove_tree(const std::string& name) const;                    // without following symlinks
  std::vector<std::string> list() const;                              // entry names, sorted

  const std::string& path() const { return path_; }  // for messages
  std::string path(const std::string& rel) const { return path_ + "/" + rel; }
  int fd() const { return fd_; }

 private:
  Dir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// A fresh directory of this process's own under the system's temporary directory, named `prefix`
// and six random characters, removed with everything in it when this goes. UserError "<what>:
// cannot create a directory under <tmp>" (without "<what>: " when what is empty) when it cannot be
// made.
// A process that ends without unwinding (a stage found hung ends with _exit) removes the scratch
// directories still in use first: remove_scratch_dirs_in_use().
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix, std::string_view what = "");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  const Dir& dir() const { return dir_; }

 private:
  std::string path_;
  Dir dir_;
};

// Removes every ScratchDir this process holds now, for an end that runs no destructors.
void remove_scratch_dirs_in_use();

// Writes stem.ext, or stem-2.ext, stem-3.ext, ... whichever does not exist yet (never
// overwriting), and returns the name written. UserError naming the path when the write fails.
std::string write_unique(const Dir& dir, const std::string& stem, const std::string& ext, std::string_view data);

// "Nothing already written is overwritten": refuses, before a command writes anything, when any of
// `rels` (paths relative to dir) already names something — UserError "'<path>' already exists:
// <what> never overwrites a file ...".
void refuse_existing(const Dir& dir, const std::vector<std::string>& rels, std::string_view what);
// Creates `name` in dir where nothing has that name (one made since refuse_existing is refused too).
void write_new_file(const Dir& dir, const std::string& name, std::string_view data, std::string_view what);

// Splits a relative path into components; UserError for an absolute path, "..", or an empty one.
std::vector<std::string> relative_components(const std::string& rel, std::string_view what);

// The number after the largest N among names PREFIX<N>SUFFIX (1 when there is none): how a
// resumed run numbers on after an earlier run's files. Names are untrusted: N is 1 to 18 digits
// (every number a counter reaches, past 9 digits included, without overflowing int64); a longer
// N is no number a counter reaches, so it is not a numbered name.
int64_t next_number_after(const std::vector<std::string>& names, std::string_view prefix, std::string_view suffix);

}  // namespace reprokit
