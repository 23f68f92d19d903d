#include "specs/common/TaskLoop.h"

namespace monogen::specs {

void forEachTask(ir::Builder& b, ir::Val block, int64_t base, int64_t tasks, int blocks,
                 const std::function<void(ir::Val)>& body) {
  ir::Val first = (block - b.i32(base % blocks) + b.i32(blocks)) % b.i32(blocks);
  b.for_(first, b.i32(tasks), b.i32(blocks), body);
}

}  // namespace monogen::specs
