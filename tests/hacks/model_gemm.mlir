"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "w"}, {kf.name = "b"}], function_type = (tensor<128x256xf16>, tensor<256x256xf16>, tensor<256xf16>) -> (tensor<128x256xf16>), sym_name = "model"}> ({
  ^bb0(%x: tensor<128x256xf16>, %w: tensor<256x256xf16>, %b: tensor<256xf16>):
    %mm = "kf.mm"(%x, %w) : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16> loc("mm")
    %a = "kf.add"(%mm, %b) : (tensor<128x256xf16>, tensor<256xf16>) -> tensor<128x256xf16> loc("bias")
    %y = "kf.relu"(%a) : (tensor<128x256xf16>) -> tensor<128x256xf16> loc("y")
    "func.return"(%y) : (tensor<128x256xf16>) -> ()
  }) : () -> ()
}) : () -> ()
