#include "specs/common/TaskLoop.h"

namespace monogen::specs {

ir::Val firstTask(ir::Builder& b, ir::Val block, int64_t base, int blocks) {
  return (block - b.i32(base % blocks) + b.i32(blocks)) % b.i32(blocks);
}

ir::Val stageFirstTask(ir::Builder& b, ir::Val block, int64_t base, int blocks) {
  if (base % blocks == 0) return firstTask(b, block, base, blocks);
  return b.urem(b.stageBlock() + b.i32(blocks - base % blocks), b.i32(blocks));
}

void forEachTask(ir::Builder& b, ir::Val block, int64_t base, int64_t tasks, int blocks,
                 const std::function<void(ir::Val)>& body, bool stageBlock) {
  ir::Val first = stageBlock ? stageFirstTask(b, block, base, blocks) : firstTask(b, block, base, blocks);
  b.for_(first, b.i32(tasks), b.i32(blocks), body);
}

}  // namespace monogen::specs
