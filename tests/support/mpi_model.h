// A star-mkmodel model shared by every rank of an MPI test: rank 0 writes it, the others wait.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace star::testing {

class SharedModelDir {
 public:
  // args: star-mkmodel arguments after --out, e.g. "--preset tiny --seed 3". `file`: a name inside
  // the directory for the model (a GGUF file, "--format gguf"); path() is then that file.
  explicit SharedModelDir(const std::string& args, const std::string& file = "") {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096] = {};
    if (rank == 0) {
      owned_ = std::make_unique<TempDir>();
      const std::filesystem::path out = file.empty() ? owned_->path() : owned_->path() / file;
      const std::string cmd = std::string(STAR_MKMODEL_PATH) + " --out " + out.string() + " " + args + " >/dev/null";
      ok_ = std::system(cmd.c_str()) == 0;
      std::snprintf(path, sizeof(path), "%s", ok_ ? out.c_str() : "");
    }
    MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = path;
    ok_ = !path_.empty();
  }
  ~SharedModelDir() { MPI_Barrier(MPI_COMM_WORLD); }  // nobody reads it once rank 0 deletes it

  bool ok() const { return ok_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::unique_ptr<TempDir> owned_;
  std::filesystem::path path_;
  bool ok_ = false;
};

}  // namespace star::testing
