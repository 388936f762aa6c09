"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2048x1024xbf16>) -> (tensor<2048x1024xbf16>), sym_name = "model"}> ({
  ^bb0(%x: tensor<2048x1024xbf16>):
    %sig = "kf.sigmoid"(%x) : (tensor<2048x1024xbf16>) -> tensor<2048x1024xbf16> loc("sig")
    %y = "kf.mul"(%x, %sig) : (tensor<2048x1024xbf16>, tensor<2048x1024xbf16>) -> tensor<2048x1024xbf16> loc("y")
    "func.return"(%y) : (tensor<2048x1024xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
