use crate::lutram::LutRam;
use rust_hdl::prelude::*;

#[derive(LogicBlock)]
pub struct Proto {
    pub clock: Signal<In, Clock>,
    pub addr: Signal<In, Bits<4>>,
    pub sel: Signal<In, Bits<3>>,
    pub inc: Signal<In, bool>,
    pub out: Signal<Out, Bits<32>>,
    pub outw: Signal<Out, Bits<256>>,
    pub flags: Signal<Out, Bits<8>>,
    banks: [LutRam<Bits<32>, 4>; 8],
    words: [Signal<Local, Bits<32>>; 8],
    one: Constant<Bits<32>>,
    k3: [Constant<Bits<3>>; 8],
    lf: Signal<Local, Bits<8>>,
    z8: Constant<Bits<8>>,
    z256: Constant<Bits<256>>,
    lw: Signal<Local, Bits<256>>,
}

impl Default for Proto {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            addr: Default::default(),
            sel: Default::default(),
            inc: Default::default(),
            out: Default::default(),
            outw: Default::default(),
            flags: Default::default(),
            banks: Default::default(),
            words: Default::default(),
            one: Constant::new(1.into()),
            lf: Default::default(),
            z8: Constant::new(0.into()),
            z256: Constant::new(0.into()),
            lw: Default::default(),
            k3: core::array::from_fn(|i| Constant::new((i as u64).into())),
        }
    }
}

impl Logic for Proto {
    #[hdl_gen]
    fn update(&mut self) {
        self.out.next = self.words[0].val();
        self.lw.next = self.z256.val();
        self.lf.next = self.z8.val();
        for i in 0..8 {
            self.banks[i].clock.next = self.clock.val();
            self.banks[i].read_address.next = self.addr.val();
            self.banks[i].write_address.next = self.addr.val();
            self.words[i].next = self.banks[i].read_data.val();
            self.banks[i].write_data.next = self.banks[i].read_data.val() + self.one.val();
            self.banks[i].write_enable.next = self.inc.val() & (self.sel.val() == self.k3[i].val());
            if self.sel.val() == self.k3[i].val() {
                self.out.next = self.words[i].val();
            }
            self.lw.next = self.lw.val().replace_bit(i, self.words[i].val().any());
            self.lf.next = self.lf.val().replace_bit(i, self.words[i].val().any());
        }
        self.outw.next = self.lw.val();
        self.flags.next = self.lf.val();
    }
}
