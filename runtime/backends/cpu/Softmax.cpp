//===- Softmax.cpp - Softmax, LogSoftmax and SoftmaxGrad_13 on oneDNN -----===//
#include "Dnnl.h"

using dnnl::memory;

namespace comet::rt::cpu {

int32_t run(comet_rt_context *ctx, const softmax_args &a) {
  return softmaxImpl(ctx, "softmax", a.x, a.x.data, a.y.data, a.axis, false);
}

int32_t run(comet_rt_context *ctx, const log_softmax_args &a) {
  return softmaxImpl(ctx, "log_softmax", a.x, a.x.data, a.y.data, a.axis, true);
}

int32_t run(comet_rt_context *ctx, const softmax_grad_args &a) {
  const char *op = "softmax_grad";
  const Tensor &y = a.y;
  int64_t axis = normAxis(a.axis, y.rank());
  int64_t outer = product(y.dims, 0, axis), mid = y.dim(axis),
          inner = product(y.dims, axis + 1, y.dims.size());
  if (y.numel() == 0)
    return ok();
  return guard(op, [&] {
    memory::desc md({outer, mid, inner}, memory::data_type::f32,
                    memory::format_tag::abc);
    Primitive p = getPrimitive(key(op, {outer, mid, inner}), [&] {
      using sf = dnnl::softmax_v2_forward;
      using sb = dnnl::softmax_v2_backward;
      sf::desc fd(dnnl::prop_kind::forward_training,
                  dnnl::algorithm::softmax_accurate, md, md, 1);
      sf::primitive_desc fpd(fd, engine());
      sb::desc d(dnnl::algorithm::softmax_accurate, md, md, md, 1);
      sb::primitive_desc pd(d, userScratchpadAttr(), engine(), fpd);
      return Primitive{sb(pd), pd.scratchpad_desc()};
    });
    execute(ctx, p,
            {{DNNL_ARG_DST, mem(md, y.data)},
             {DNNL_ARG_DIFF_DST, mem(md, a.dy.data)},
             {DNNL_ARG_DIFF_SRC, mem(md, a.dx.data)}});
    return ok();
  });
}

} // namespace comet::rt::cpu
